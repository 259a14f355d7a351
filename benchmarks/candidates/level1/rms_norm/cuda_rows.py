"""RMS norm (bfloat16, Llama's), NVRTC CUDA with cuda_bf16.h: one block per row, float32 statistics.

Expected verdict: correct

Pass 1 sums squares in float32 (warp shuffles, then one warp over the warps); pass 2 rounds
x * rsqrt(mean + eps) to bfloat16, multiplies by the bfloat16 weight in float32 and rounds again,
as the reference does. The weight is drawn in __init__ exactly as Model draws it.
"""

import torch
from torch import nn

from cudasmith.runtime import compile_cuda

THREADS = 256

SOURCE = r"""
#include <cuda_bf16.h>
#define THREADS 256
#define WARPS (THREADS / 32)

extern "C" __global__ void __launch_bounds__(THREADS)
rms_norm_rows(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ weight,
              __nv_bfloat16* __restrict__ y, int dim, float eps) {
    __shared__ float warp_sums[WARPS];
    __shared__ float row_scale;
    const __nv_bfloat16* in = x + (long long)blockIdx.x * dim;
    __nv_bfloat16* out = y + (long long)blockIdx.x * dim;
    float squares = 0.0f;
    for (int c = threadIdx.x; c < dim; c += THREADS) {
        float v = __bfloat162float(in[c]);
        squares = fmaf(v, v, squares);
    }
    for (int offset = 16; offset > 0; offset >>= 1) squares += __shfl_xor_sync(0xffffffff, squares, offset);
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) warp_sums[warp] = squares;
    __syncthreads();
    if (warp == 0) {
        squares = lane < WARPS ? warp_sums[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1) squares += __shfl_xor_sync(0xffffffff, squares, offset);
        if (lane == 0) row_scale = rsqrtf(squares / dim + eps);
    }
    __syncthreads();
    float scale = row_scale;
    for (int c = threadIdx.x; c < dim; c += THREADS) {
        float normalised = __bfloat162float(__float2bfloat16(__bfloat162float(in[c]) * scale));
        out[c] = __float2bfloat16(__bfloat162float(weight[c]) * normalised);
    }
}
"""

rms_norm_rows = compile_cuda(SOURCE, "rms_norm_rows")


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter((torch.randn(dim) * 0.2 + 1.0).to(torch.bfloat16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, dim = x.shape
        rms_norm_rows(x, self.weight, y, dim, self.eps, grid=rows, block=THREADS)
        return y
