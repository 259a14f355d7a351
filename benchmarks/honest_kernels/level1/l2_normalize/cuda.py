"""L2 normalisation of rows, x / max(||x||, 1e-12) as F.normalize computes it: one block per row sums
the squares (warp shuffles, then across warps through shared memory) and scales the row; the second
read of the row mostly hits L2."""

import torch
from torch import nn

from cudasmith.runtime import compile_cuda

SOURCE = r"""
#define THREADS 256
#define WARPS (THREADS / 32)

extern "C" __global__ void __launch_bounds__(THREADS)
l2_normalize_rows(const float* __restrict__ x, float* __restrict__ y, long dim) {
    const float* in = x + (long)blockIdx.x * dim;
    float* out = y + (long)blockIdx.x * dim;
    float squares = 0.0f;
    for (long c = threadIdx.x; c < dim; c += THREADS) squares += in[c] * in[c];
    for (int offset = 16; offset > 0; offset >>= 1) squares += __shfl_xor_sync(0xffffffff, squares, offset);
    __shared__ float partial[WARPS];
    __shared__ float scale;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) partial[warp] = squares;
    __syncthreads();
    if (warp == 0) {
        squares = lane < WARPS ? partial[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1) squares += __shfl_xor_sync(0xffffffff, squares, offset);
        if (lane == 0) scale = 1.0f / fmaxf(sqrtf(squares), 1e-12f);
    }
    __syncthreads();
    for (long c = threadIdx.x; c < dim; c += THREADS) out[c] = in[c] * scale;
}
"""
THREADS = 256
l2_normalize_rows = compile_cuda(SOURCE, "l2_normalize_rows")


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        l2_normalize_rows(x, y, x.shape[-1], grid=x.numel() // x.shape[-1], block=THREADS)
        return y
