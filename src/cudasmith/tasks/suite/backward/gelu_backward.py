"""Backward pass of the exact (erf) GELU in float32: the gradient of the input.

Inputs span the negative tail, the curved middle and the linear positive range of GELU, where its
derivative goes from slightly negative through above one back to one.
"""

import torch
import torch.nn.functional as F
from torch import nn

DTYPE = "float32"
CONFIGS = [{"rows": 7, "cols": 1023}, {"rows": 1000, "cols": 4099}, {"rows": 8192, "cols": 3072}]
HIDDEN_CONFIGS = [{"rows": range(266, 418), "cols": range(1639, 2563)}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor, grad_output: torch.Tensor) -> torch.Tensor:
        with torch.enable_grad():
            x = x.detach().clone().requires_grad_()
            (grad_x,) = torch.autograd.grad(F.gelu(x), (x,), grad_output)
        return grad_x


def get_inputs(rows: int = 7, cols: int = 1023) -> list[torch.Tensor]:
    return [torch.randn(rows, cols) * 3.0, torch.randn(rows, cols)]


def get_init_inputs(rows: int = 7, cols: int = 1023) -> list:
    return []


def flops(rows: int, cols: int) -> int:
    return 20 * rows * cols


def bytes_moved(rows: int, cols: int) -> int:
    return 3 * 4 * rows * cols
