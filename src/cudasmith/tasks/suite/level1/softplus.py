"""Softplus, log(1 + exp(β·x)) / β with β = 1 and PyTorch's linear threshold at β·x > 20, in float32.

Inputs spread over about ±40, so that the linear branch above the threshold, the exponentially small
tail for very negative x and the curved middle all occur.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "float32"
CONFIGS = [{"rows": 16, "cols": 999}, {"rows": 1024, "cols": 4100}, {"rows": 4096, "cols": 16384}]
HIDDEN_CONFIGS = [{"rows": range(80, 126), "cols": range(80002, 125005)}]


class Model(nn.Module):
    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.softplus(x, beta=self.beta, threshold=self.threshold)


def get_inputs(rows: int = 16, cols: int = 999) -> list[torch.Tensor]:
    return [torch.randn(rows, cols) * 12.0]


def get_init_inputs(rows: int = 16, cols: int = 999) -> list:
    return []


def flops(rows: int, cols: int) -> int:
    # β·x, a comparison, exp, log1p and the division by β.
    return 5 * rows * cols


def bytes_moved(rows: int, cols: int) -> int:
    return 2 * 4 * rows * cols
