"""A correct C vector sum that writes every element 64 times (volatile: the compiler keeps them all)."""

import torch
from torch import nn

from cudasmith.runtime import compile_c

SOURCE = r"""
void add_slow(const float* a, const float* b, float* out, long n) {
    volatile float* sink = out;
    for (long i = 0; i < n; ++i)
        for (int repeat = 0; repeat < 64; ++repeat) sink[i] = a[i] + b[i];
}
"""
add = compile_c(SOURCE, "add_slow")


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        add(a.contiguous(), b.contiguous(), out, a.numel())
        return out
