"""A CUDA kernel that writes far out of bounds: a sticky illegal-address error."""

import torch
from torch import nn

from cudasmith.runtime import compile_cuda

SOURCE = r"""
extern "C" __global__ void wild(float* out, long n) {
    out[n * 1000000000L + threadIdx.x] = 1.0f;
}
"""
wild = compile_cuda(SOURCE, "wild")


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        wild(out, a.numel(), grid=1, block=32)
        return out
