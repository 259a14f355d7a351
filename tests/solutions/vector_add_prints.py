"""An honest C vector sum that prints while it works: its output is shown, marked as the solution's."""

import sys

import torch
from torch import nn

from cudasmith.runtime import compile_c

SOURCE = r"""
void vector_add(const float* a, const float* b, float* out, long n) {
    for (long i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
"""
vector_add = compile_c(SOURCE, "vector_add")
print("compiled vector_add")
print("a warning of the solution's own", file=sys.stderr)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        print(f"forward on {a.numel()} values")
        out = torch.empty_like(a)
        vector_add(a.contiguous(), b.contiguous(), out, a.numel())
        return out
