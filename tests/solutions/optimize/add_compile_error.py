"""A C kernel that does not compile (an undeclared variable)."""

import torch
from torch import nn

from cudasmith.runtime import compile_c

SOURCE = r"""
void add_broken(const float* a, const float* b, float* out, long n) {
    for (long i = 0; i < n; ++i) out[i] = a[i] + b[i] + undeclared_offset;
}
"""
add = compile_c(SOURCE, "add_broken")


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        add(a, b, out, a.numel())
        return out
