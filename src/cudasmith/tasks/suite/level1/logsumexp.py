"""Log-sum-exp over the last dimension of a float32 matrix, log Σ exp(x), one value per row.

Each row is shifted by its own offset in [-200, 200]: exp(x) without the maximum subtracted overflows
(or underflows to log 0) on most rows.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [{"rows": 8, "cols": 999}, {"rows": 2048, "cols": 4097}, {"rows": 2048, "cols": 128256}]
HIDDEN_CONFIGS = [{"rows": range(240, 378), "cols": range(40205, 62823)}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logsumexp(x, dim=-1)


def get_inputs(rows: int = 8, cols: int = 999) -> list[torch.Tensor]:
    offsets = torch.rand(rows, 1) * 400.0 - 200.0
    return [torch.randn(rows, cols) * 3.0 + offsets]


def get_init_inputs(rows: int = 8, cols: int = 999) -> list:
    return []


def flops(rows: int, cols: int) -> int:
    # A running maximum, the subtraction, exp and the sum per element.
    return 4 * rows * cols


def bytes_moved(rows: int, cols: int) -> int:
    return 4 * (rows * cols + rows)
