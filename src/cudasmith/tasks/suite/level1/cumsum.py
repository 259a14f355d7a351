"""Inclusive prefix sum (cumulative sum) along the last dimension of a float32 matrix.

Inputs are signed with a positive drift, so that the running sums both cancel and grow along a row.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [{"rows": 8, "cols": 1000}, {"rows": 1000, "cols": 4099}, {"rows": 4096, "cols": 16384}]
HIDDEN_CONFIGS = [{"rows": range(2, 5), "cols": range(800002, 1250005)}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=-1)


def get_inputs(rows: int = 8, cols: int = 1000) -> list[torch.Tensor]:
    return [torch.randn(rows, cols) + 0.1]


def get_init_inputs(rows: int = 8, cols: int = 1000) -> list:
    return []


def flops(rows: int, cols: int) -> int:
    return rows * cols


def bytes_moved(rows: int, cols: int) -> int:
    return 2 * 4 * rows * cols
