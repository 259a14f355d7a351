"""A KernelBench-style problem with an algebraic shortcut: diag(A) @ B is a row scaling of B."""

import torch
from torch import nn

# Wide enough that the rewrite's multiply (about a millisecond on the CPU) outweighs Python's cost of calling
# it, which the CPU's own-share measure counts as the solution's.
N, M = 128, 16384


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.diag(a) @ b


def get_inputs():
    return [torch.randn(N), torch.randn(N, M)]


def get_init_inputs():
    return []
