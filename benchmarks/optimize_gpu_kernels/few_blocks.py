"""Vector sum on 16 blocks (a grid-stride loop): correct, most SMs idle."""

import torch
from torch import nn

from cudasmith.runtime import compile_cuda

SOURCE = r"""
extern "C" __global__ void add_few_blocks(const float* a, const float* b, float* out, long n) {
    long stride = (long)gridDim.x * blockDim.x;
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = a[i] + b[i];
}
"""
add = compile_cuda(SOURCE, "add_few_blocks")


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        add(a, b, out, a.numel(), grid=16, block=256)
        return out
