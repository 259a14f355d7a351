"""CRASHES on purpose. ReLU, NVRTC CUDA, whose kernel writes far outside its output: an illegal-address fault.

Expected verdict: runtime_error

Each thread computes the right value and stores it 2^40 floats past the output. The fault is sticky: the
worker's CUDA context is lost, so the judge must record the error and carry on with a fresh process.
"""

import torch
from torch import nn

from cudasmith.runtime import compile_cuda

THREADS = 256

SOURCE = r"""
extern "C" __global__ void relu_far_away(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    // 2^40 floats (4 TiB) past the output: far beyond the few GiB of device memory this process maps.
    if (i < n) y[i + (1LL << 40)] = x[i] > 0.0f ? x[i] : 0.0f;
}
"""

relu_far_away = compile_cuda(SOURCE, "relu_far_away")


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        relu_far_away(x, y, n, grid=(n + THREADS - 1) // THREADS, block=THREADS)
        return y
