"""A kernel NVRTC refuses (an undeclared name)."""

import torch
from torch import nn

from cudasmith.runtime import compile_cuda

SOURCE = r"""
extern "C" __global__ void add_broken(const float* a, const float* b, float* out, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i] + undeclared_offset;
}
"""
add = compile_cuda(SOURCE, "add_broken")


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        n = a.numel()
        add(a, b, out, n, grid=(n + 255) // 256, block=256)
        return out
