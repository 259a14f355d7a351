"""Hardtanh of a float32 matrix: x clamped to [-1, 1].

Inputs are signed with a spread of 2, so that about a third of the values hit each bound and the
rest pass through unchanged.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "float32"
CONFIGS = [{"rows": 5, "cols": 2053}, {"rows": 333, "cols": 8192}, {"rows": 8192, "cols": 8191}]
HIDDEN_CONFIGS = [{"rows": range(1639, 2563), "cols": range(821, 1285)}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardtanh(x, min_val=-1.0, max_val=1.0)


def get_inputs(rows: int = 5, cols: int = 2053) -> list[torch.Tensor]:
    return [torch.randn(rows, cols) * 2.0]


def get_init_inputs(rows: int = 5, cols: int = 2053) -> list:
    return []


def flops(rows: int, cols: int) -> int:
    return 2 * rows * cols


def bytes_moved(rows: int, cols: int) -> int:
    return 2 * 4 * rows * cols
