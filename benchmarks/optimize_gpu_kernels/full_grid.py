"""Vector sum, one element per thread over the whole grid: the fastest of these. Its block size is
declared tunable, so the search also tries the others without asking the model."""

import torch
from torch import nn

from cudasmith.runtime import compile_cuda

BLOCK = 256
TUNABLE = {"BLOCK": [128, 256, 512]}
SOURCE = r"""
extern "C" __global__ void add_full_grid(const float* a, const float* b, float* out, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
"""
add = compile_cuda(SOURCE, "add_full_grid")


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        n = a.numel()
        add(a, b, out, n, grid=(n + BLOCK - 1) // BLOCK, block=BLOCK)
        return out
