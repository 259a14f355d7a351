"""Row sum, NVRTC CUDA: one block per row, per-thread partial sums, warp shuffles, then one warp over the warps.

Expected verdict: correct

Each of 256 threads sums a strided share of the row (coalesced loads), the warps reduce with shuffles,
and warp 0 adds the eight warp sums. The summation order differs from PyTorch's, well within tolerance.
"""

import torch
from torch import nn

from cudasmith.runtime import compile_cuda

THREADS = 256

SOURCE = r"""
#define THREADS 256
#define WARPS (THREADS / 32)

extern "C" __global__ void __launch_bounds__(THREADS)
row_sum_block(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float warp_sums[WARPS];
    const float* in = x + (long long)blockIdx.x * cols;
    float total = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) total += in[c];
    for (int offset = 16; offset > 0; offset >>= 1) total += __shfl_xor_sync(0xffffffff, total, offset);
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) warp_sums[warp] = total;
    __syncthreads();
    if (warp == 0) {
        total = lane < WARPS ? warp_sums[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1) total += __shfl_xor_sync(0xffffffff, total, offset);
        if (lane == 0) y[blockIdx.x] = total;
    }
}
"""

row_sum_block = compile_cuda(SOURCE, "row_sum_block")


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        y = torch.empty(rows, dtype=x.dtype, device=x.device)
        row_sum_block(x, y, cols, grid=rows, block=THREADS)
        return y
