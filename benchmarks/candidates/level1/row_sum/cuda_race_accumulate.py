"""WRONG on purpose. Row sum, NVRTC CUDA, where every thread adds its partial sum to the output without atomics.

Expected verdict: incorrect

A data race: the 256 threads of a row's block each do `y[row] = y[row] + partial` at the same time.
Threads of a warp read the same old value and one store wins, so most partial sums are lost; which ones
varies from run to run, and in practice no call gets the whole sum.
"""

import torch
from torch import nn

from cudasmith.runtime import compile_cuda

THREADS = 256

SOURCE = r"""
#define THREADS 256

extern "C" __global__ void __launch_bounds__(THREADS)
row_sum_racy(const float* __restrict__ x, float* y, int cols) {
    const float* in = x + (long long)blockIdx.x * cols;
    float partial = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) partial += in[c];
    if (threadIdx.x == 0) y[blockIdx.x] = 0.0f;
    __syncthreads();
    y[blockIdx.x] = y[blockIdx.x] + partial;  // the race: a read-modify-write shared by 256 threads
}
"""

row_sum_racy = compile_cuda(SOURCE, "row_sum_racy")


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        y = torch.empty(rows, dtype=x.dtype, device=x.device)
        row_sum_racy(x, y, cols, grid=rows, block=THREADS)
        return y
