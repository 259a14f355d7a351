"""Vector sum at two sizes a hundred times apart: a config time limit between their estimated checks
skips the larger one."""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [{"n": 1_000}, {"n": 100_000}]


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b


def get_inputs(n: int = 1_000) -> list[torch.Tensor]:
    return [torch.randn(n), torch.randn(n)]


def get_init_inputs(n: int = 1_000) -> list:
    return []
