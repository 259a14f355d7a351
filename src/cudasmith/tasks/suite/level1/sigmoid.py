"""Logistic sigmoid, 1 / (1 + exp(-x)), of a float32 vector.

Inputs spread over about ±30, so that both saturated tails occur (the answer within an ulp of 1, or far
below the float32 epsilon) as well as the steep middle.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [{"n": 4099}, {"n": 1_048_573}, {"n": 134_217_689}]
HIDDEN_CONFIGS = [{"n": range(4000008, 6250015)}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x)


def get_inputs(n: int = 4099) -> list[torch.Tensor]:
    return [torch.randn(n) * 8.0]


def get_init_inputs(n: int = 4099) -> list:
    return []


def flops(n: int) -> int:
    return 3 * n


def bytes_moved(n: int) -> int:
    return 2 * 4 * n
