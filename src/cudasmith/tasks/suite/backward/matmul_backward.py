"""Backward pass of the matrix product C = A @ B in float32: the gradients of A and B.

A is M×K, B is K×N; the inputs include the upstream gradient of C.

TF32 tensor cores are not float32: their error exceeds the tolerance at these sizes.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"m": 64, "k": 65, "n": 63},
    {"m": 1000, "k": 1024, "n": 999},
    {"m": 4096, "k": 4096, "n": 4096},
]
HIDDEN_CONFIGS = [{"m": range(308, 483), "k": range(615, 963), "n": range(207, 325)}]


class Model(nn.Module):
    def forward(
        self, a: torch.Tensor, b: torch.Tensor, grad_output: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        with torch.enable_grad():
            a, b = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
            return torch.autograd.grad(torch.matmul(a, b), (a, b), grad_output)


def get_inputs(m: int = 64, k: int = 65, n: int = 63) -> list[torch.Tensor]:
    return [torch.randn(m, k), torch.randn(k, n), torch.randn(m, n)]


def get_init_inputs(m: int = 64, k: int = 65, n: int = 63) -> list:
    return []


def flops(m: int, k: int, n: int) -> int:
    return 4 * m * k * n


def bytes_moved(m: int, k: int, n: int) -> int:
    return 4 * 2 * (m * k + k * n + m * n)
