"""WRONG on purpose. Vector sum, NVRTC CUDA, float4 body with an off-by-one tail: the last element is never written.

Expected verdict: incorrect

The tail loop stops one element short (`< tail - 1`). The first config (n = 1000, a multiple of 4) has no
tail and passes; every other config (1 048 573, 50 000 003 and the hidden 3 000 017) leaves its last
element unwritten, holding whatever the allocator left there (the harness poisons freed memory with NaN).
An evaluator that checks only the first shape accepts this kernel.
"""

import torch
from torch import nn

from cudasmith.runtime import compile_cuda

THREADS = 256

SOURCE = r"""
extern "C" __global__ void add_float4_short_tail(const float* __restrict__ a, const float* __restrict__ b,
                                                 float* __restrict__ c, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long n4 = n / 4;
    if (i < n4) {
        float4 x = reinterpret_cast<const float4*>(a)[i];
        float4 y = reinterpret_cast<const float4*>(b)[i];
        reinterpret_cast<float4*>(c)[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
    long long tail = n - n4 * 4;
    if (i < tail - 1) {
        long long t = n4 * 4 + i;
        c[t] = a[t] + b[t];
    }
}
"""

add_float4_short_tail = compile_cuda(SOURCE, "add_float4_short_tail")


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a, b = a.contiguous(), b.contiguous()
        c = torch.empty_like(a)
        n = a.numel()
        threads_needed = max(n // 4, n % 4, 1)
        add_float4_short_tail(a, b, c, n, grid=(threads_needed + THREADS - 1) // THREADS, block=THREADS)
        return c
