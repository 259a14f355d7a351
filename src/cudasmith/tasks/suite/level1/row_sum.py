"""Sum over the last dimension of a float32 matrix, one value per row.

Inputs are signed, so that partial sums cancel and the order of summation shows in the rounding.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [{"rows": 8, "cols": 1000}, {"rows": 4099, "cols": 1023}, {"rows": 8192, "cols": 32768}]
HIDDEN_CONFIGS = [{"rows": range(13, 23), "cols": range(240005, 375010)}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=-1)


def get_inputs(rows: int = 8, cols: int = 1000) -> list[torch.Tensor]:
    return [torch.randn(rows, cols) * 2.0 + 0.5]


def get_init_inputs(rows: int = 8, cols: int = 1000) -> list:
    return []


def flops(rows: int, cols: int) -> int:
    return rows * cols


def bytes_moved(rows: int, cols: int) -> int:
    return 4 * (rows * cols + rows)
