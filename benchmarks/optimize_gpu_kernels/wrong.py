"""Vector difference where a sum is asked for: incorrect."""

import torch
from torch import nn

from cudasmith.runtime import compile_cuda

SOURCE = r"""
extern "C" __global__ void add_wrong(const float* a, const float* b, float* out, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] - b[i];
}
"""
add = compile_cuda(SOURCE, "add_wrong")


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        n = a.numel()
        add(a, b, out, n, grid=(n + 255) // 256, block=256)
        return out
