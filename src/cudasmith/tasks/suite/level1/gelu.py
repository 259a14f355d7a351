"""GELU (the exact, erf form) of a float32 matrix, x · Φ(x) elementwise.

Inputs are signed with a spread of 3, so that values sit both around zero, where GELU bends, and in
the tails, where it approaches the identity (x > 0) or zero (x < 0).
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "float32"
CONFIGS = [{"rows": 9, "cols": 1001}, {"rows": 512, "cols": 12289}, {"rows": 8192, "cols": 11008}]
HIDDEN_CONFIGS = [{"rows": range(205, 323), "cols": range(2456, 3840)}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x)


def get_inputs(rows: int = 9, cols: int = 1001) -> list[torch.Tensor]:
    return [torch.randn(rows, cols) * 3.0]


def get_init_inputs(rows: int = 9, cols: int = 1001) -> list:
    return []


def flops(rows: int, cols: int) -> int:
    # 0.5 · x · (1 + erf(x / √2)): four arithmetic operations and one erf per element.
    return 5 * rows * cols


def bytes_moved(rows: int, cols: int) -> int:
    return 2 * 4 * rows * cols
