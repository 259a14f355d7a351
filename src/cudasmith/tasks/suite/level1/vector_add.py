"""Elementwise sum of two float32 vectors.

The simplest memory-bound kernel: two reads and one write per element.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [{"n": 1000}, {"n": 1_048_573}, {"n": 50_000_003}]
HIDDEN_CONFIGS = [{"n": range(2400013, 3750023)}]


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b


def get_inputs(n: int = 1000) -> list[torch.Tensor]:
    return [torch.randn(n), torch.randn(n)]


def get_init_inputs(n: int = 1000) -> list:
    return []


def flops(n: int) -> int:
    return n


def bytes_moved(n: int) -> int:
    return 3 * 4 * n
