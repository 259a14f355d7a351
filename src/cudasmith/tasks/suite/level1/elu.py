"""ELU of a float16 matrix: x for x > 0, α · (exp(x) − 1) otherwise, with α = 1.

Inputs are signed with a spread of 3: large negative values saturate at −α, small negative ones follow
the exponential, positive ones pass through.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "float16"
CONFIGS = [{"rows": 3, "cols": 4001}, {"rows": 1000, "cols": 1000}, {"rows": 16384, "cols": 8193}]
HIDDEN_CONFIGS = [{"rows": range(61, 98), "cols": range(52431, 81925)}]


class Model(nn.Module):
    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.elu(x, alpha=self.alpha)


def get_inputs(rows: int = 3, cols: int = 4001) -> list[torch.Tensor]:
    return [(torch.randn(rows, cols) * 3.0).to(torch.float16)]


def get_init_inputs(rows: int = 3, cols: int = 4001) -> list:
    return []


def flops(rows: int, cols: int) -> int:
    return 3 * rows * cols


def bytes_moved(rows: int, cols: int) -> int:
    return 2 * 2 * rows * cols
