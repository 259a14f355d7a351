"""ReLU of a float32 matrix, max(x, 0) elementwise.

Inputs are signed and wide-ranged, so that passing the input through unchanged is wrong.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [{"rows": 7, "cols": 1023}, {"rows": 128, "cols": 16411}, {"rows": 4096, "cols": 8190}]
HIDDEN_CONFIGS = [{"rows": range(266, 418), "cols": range(1639, 2563)}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs(rows: int = 7, cols: int = 1023) -> list[torch.Tensor]:
    return [torch.randn(rows, cols) * 10.0]


def get_init_inputs(rows: int = 7, cols: int = 1023) -> list:
    return []


def flops(rows: int, cols: int) -> int:
    return rows * cols


def bytes_moved(rows: int, cols: int) -> int:
    return 2 * 4 * rows * cols
