"""Transpose of a float32 matrix into a new contiguous matrix (rows × cols to cols × rows).

Pure data movement: reads and writes cannot both be coalesced without staging tiles.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [{"rows": 33, "cols": 1001}, {"rows": 4099, "cols": 4097}, {"rows": 8192, "cols": 16384}]
HIDDEN_CONFIGS = [{"rows": range(800, 1251), "cols": range(2400, 3753)}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.t().contiguous()


def get_inputs(rows: int = 33, cols: int = 1001) -> list[torch.Tensor]:
    return [torch.randn(rows, cols)]


def get_init_inputs(rows: int = 33, cols: int = 1001) -> list:
    return []
