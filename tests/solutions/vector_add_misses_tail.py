"""Wrong on purpose: processes elements in blocks of 32 and drops the remainder (task level1/vector_add)."""

import torch
from torch import nn

from cudasmith.runtime import compile_c

SOURCE = r"""
void vector_add(const float* a, const float* b, float* out, long n) {
    for (long i = 0; i < (n / 32) * 32; ++i) out[i] = a[i] + b[i];
    for (long i = (n / 32) * 32; i < n; ++i) out[i] = 0.0f;
}
"""
vector_add = compile_c(SOURCE, "vector_add")


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        vector_add(a.contiguous(), b.contiguous(), out, a.numel())
        return out
