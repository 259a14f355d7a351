"""A KernelBench-style problem with an algebraic shortcut: diag(A) @ B is a row scaling of B."""

import torch
from torch import nn

# Wide enough that the rewrite's multiply (a few milliseconds on the CPU) outweighs Python's cost of calling
# it, which the CPU's own-share measure counts as the solution's: at 16384 columns the rewrite's share was
# 2.5-5.6 % (over the re-judge's 5 % line for a custom kernel with PyTorch), at 65536 0.6-0.8 %.
N, M = 128, 65536


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.diag(a) @ b


def get_inputs():
    return [torch.randn(N), torch.randn(N, M)]


def get_init_inputs():
    return []
