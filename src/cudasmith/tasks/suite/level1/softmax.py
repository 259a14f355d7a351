"""Softmax over the last dimension of a float32 matrix.

Rows run from a thousand columns to vocabulary size. Each row is shifted by its own offset in
[-100, 100]: softmax does not change, but exp(x) without the maximum subtracted overflows or underflows.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [{"rows": 8, "cols": 1000}, {"rows": 1021, "cols": 4097}, {"rows": 4096, "cols": 32000}]
HIDDEN_CONFIGS = [{"rows": range(204, 320), "cols": range(40205, 62823)}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs(rows: int = 8, cols: int = 1000) -> list[torch.Tensor]:
    offsets = torch.rand(rows, 1) * 200.0 - 100.0
    return [torch.randn(rows, cols) * 3.0 + offsets]


def get_init_inputs(rows: int = 8, cols: int = 1000) -> list:
    return []


def flops(rows: int, cols: int) -> int:
    return 5 * rows * cols


def bytes_moved(rows: int, cols: int) -> int:
    return 2 * 4 * rows * cols
