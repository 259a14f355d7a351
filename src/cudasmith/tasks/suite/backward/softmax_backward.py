"""Backward pass of softmax over the last dimension in float32: the gradient of the logits.

The inputs are the logits and the upstream gradient.

As in level1/softmax, each row is shifted by its own offset in [-100, 100], so recomputing the softmax
without subtracting the maximum overflows or underflows.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [{"rows": 8, "cols": 1000}, {"rows": 1021, "cols": 4097}, {"rows": 4096, "cols": 32000}]
HIDDEN_CONFIGS = [{"rows": range(204, 320), "cols": range(40205, 62823)}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor, grad_output: torch.Tensor) -> torch.Tensor:
        with torch.enable_grad():
            x = x.detach().clone().requires_grad_()
            (grad_x,) = torch.autograd.grad(torch.softmax(x, dim=-1), (x,), grad_output)
        return grad_x


def get_inputs(rows: int = 8, cols: int = 1000) -> list[torch.Tensor]:
    offsets = torch.rand(rows, 1) * 200.0 - 100.0
    return [torch.randn(rows, cols) * 3.0 + offsets, torch.randn(rows, cols)]


def get_init_inputs(rows: int = 8, cols: int = 1000) -> list:
    return []


def flops(rows: int, cols: int) -> int:
    return 8 * rows * cols


def bytes_moved(rows: int, cols: int) -> int:
    return 3 * 4 * rows * cols
