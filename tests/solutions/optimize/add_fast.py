"""A plain C vector sum: the fastest of the scripted answers."""

import torch
from torch import nn

from cudasmith.runtime import compile_c

SOURCE = r"""
void add_fast(const float* a, const float* b, float* out, long n) {
    for (long i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
"""
add = compile_c(SOURCE, "add_fast")


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        add(a.contiguous(), b.contiguous(), out, a.numel())
        return out
