"""WRONG on purpose. Row softmax, NVRTC CUDA: exp(x) / sum(exp(x)) without subtracting the row's maximum.

Expected verdict: incorrect

Mathematically the same function, numerically not: the task shifts each row by an offset in
[-100, 100], so exp overflows to inf (inf / inf = NaN) on rows shifted above ~80 and underflows to
zero or subnormals (0 / 0 = NaN, or a few significant bits) on rows shifted below ~-85. The judge
reports NaN/Inf where the reference has finite values.
"""

import torch
from torch import nn

from cudasmith.runtime import compile_cuda

THREADS = 256

SOURCE = r"""
#define THREADS 256

extern "C" __global__ void __launch_bounds__(THREADS)
softmax_unshifted(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float partial[THREADS / 32];
    const float* in = x + (long long)blockIdx.x * cols;
    float* out = y + (long long)blockIdx.x * cols;
    float total = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) total += expf(in[c]);
    for (int offset = 16; offset > 0; offset >>= 1) total += __shfl_xor_sync(0xffffffff, total, offset);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = total;
    __syncthreads();
    total = 0.0f;
    for (int w = 0; w < THREADS / 32; ++w) total += partial[w];
    for (int c = threadIdx.x; c < cols; c += THREADS) out[c] = expf(in[c]) / total;
}
"""

softmax_unshifted = compile_cuda(SOURCE, "softmax_unshifted")


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        softmax_unshifted(x, y, x.shape[1], grid=x.shape[0], block=THREADS)
        return y
