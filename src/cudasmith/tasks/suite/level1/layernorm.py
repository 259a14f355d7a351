"""Layer normalisation over the last dimension, with a learned scale and shift, in float32.

The scale and shift are random (not the identity ones and zeros), and the inputs have a mean far from
zero, so that a one-pass variance loses precision.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [{"rows": 32, "dim": 1000}, {"rows": 4093, "dim": 1024}, {"rows": 8192, "dim": 4096}]
HIDDEN_CONFIGS = [{"rows": range(408, 640), "dim": 2050}]


class Model(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=eps)
        nn.init.normal_(self.norm.weight)
        nn.init.normal_(self.norm.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs(rows: int = 32, dim: int = 1000) -> list[torch.Tensor]:
    return [torch.randn(rows, dim) * 3.0 + 20.0]


def get_init_inputs(rows: int = 32, dim: int = 1000) -> list:
    return [dim]


def flops(rows: int, dim: int) -> int:
    return 8 * rows * dim


def bytes_moved(rows: int, dim: int) -> int:
    return 4 * (2 * rows * dim + 2 * dim)
