"""Backward pass of layer normalisation in float32: the gradients of the input, scale and shift.

Normalisation is over the last dimension; the inputs include the upstream gradient.

As in level1/layernorm, the inputs have a mean far from zero and the scale and shift are random.
"""

import torch
import torch.nn.functional as F
from torch import nn

DTYPE = "float32"
CONFIGS = [{"rows": 37, "dim": 1000}, {"rows": 4093, "dim": 1024}, {"rows": 8192, "dim": 4096}]
HIDDEN_CONFIGS = [{"rows": range(408, 640), "dim": 2050}]
EPS = 1e-5


class Model(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim))
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x: torch.Tensor, grad_output: torch.Tensor) -> tuple[torch.Tensor, ...]:
        with torch.enable_grad():
            x, weight, bias = (t.detach().clone().requires_grad_() for t in (x, self.weight, self.bias))
            y = F.layer_norm(x, x.shape[-1:], weight, bias, EPS)
            return torch.autograd.grad(y, (x, weight, bias), grad_output)


def get_inputs(rows: int = 37, dim: int = 1000) -> list[torch.Tensor]:
    return [torch.randn(rows, dim) * 3.0 + 20.0, torch.randn(rows, dim)]


def get_init_inputs(rows: int = 37, dim: int = 1000) -> list:
    return [dim]


def flops(rows: int, dim: int) -> int:
    return 12 * rows * dim


def bytes_moved(rows: int, dim: int) -> int:
    return 4 * (3 * rows * dim + 4 * dim)
