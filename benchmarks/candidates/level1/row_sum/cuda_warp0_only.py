"""WRONG on purpose. Row sum, NVRTC CUDA, whose block reduction keeps warp 0's sum and drops the other seven.

Expected verdict: incorrect

The cross-warp step is missing: each warp reduces its threads' partial sums, and only warp 0 writes its
result. The output is the sum of the columns c with c mod 256 < 32, about an eighth of each row.
"""

import torch
from torch import nn

from cudasmith.runtime import compile_cuda

THREADS = 256

SOURCE = r"""
#define THREADS 256

extern "C" __global__ void __launch_bounds__(THREADS)
row_sum_first_warp(const float* __restrict__ x, float* __restrict__ y, int cols) {
    const float* in = x + (long long)blockIdx.x * cols;
    float total = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) total += in[c];
    for (int offset = 16; offset > 0; offset >>= 1) total += __shfl_xor_sync(0xffffffff, total, offset);
    if (threadIdx.x == 0) y[blockIdx.x] = total;
}
"""

row_sum_first_warp = compile_cuda(SOURCE, "row_sum_first_warp")


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        y = torch.empty(rows, dtype=x.dtype, device=x.device)
        row_sum_first_warp(x, y, cols, grid=rows, block=THREADS)
        return y
