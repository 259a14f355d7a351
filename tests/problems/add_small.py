"""Vector sum, one small config: a task the optimize tests judge in seconds on the CPU."""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [{"n": 65_537}]


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b


def get_inputs(n: int = 65_537) -> list[torch.Tensor]:
    return [torch.randn(n), torch.randn(n)]


def get_init_inputs(n: int = 65_537) -> list:
    return []
