"""Vector sum whose bytes_moved() claims a terabyte: any honest time is under its roofline floor.

It stands in for a candidate faster than physics allows (the harness must call that impossible).
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [{"n": 4099}]


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b


def get_inputs(n: int = 4099) -> list[torch.Tensor]:
    return [torch.randn(n), torch.randn(n)]


def get_init_inputs(n: int = 4099) -> list:
    return []


def bytes_moved(n: int) -> int:
    return 10**12
