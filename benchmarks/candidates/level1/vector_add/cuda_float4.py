"""Vector sum, NVRTC CUDA: float4 loads and stores, the last n % 4 elements one by one.

Expected verdict: correct

Each thread adds one float4; the first n % 4 threads of the grid also add one element of the tail.
Pointers that are not 16-byte aligned (a view with an offset) take a scalar kernel instead.
"""

import torch
from torch import nn

from cudasmith.runtime import compile_cuda

THREADS = 256
# float4 accesses need 16-byte aligned addresses.
ALIGNMENT = 16

SOURCE = r"""
extern "C" __global__ void add_float4(const float* __restrict__ a, const float* __restrict__ b,
                                      float* __restrict__ c, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long n4 = n / 4;
    if (i < n4) {
        float4 x = reinterpret_cast<const float4*>(a)[i];
        float4 y = reinterpret_cast<const float4*>(b)[i];
        reinterpret_cast<float4*>(c)[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
    if (i < n - n4 * 4) {
        long long t = n4 * 4 + i;
        c[t] = a[t] + b[t];
    }
}

extern "C" __global__ void add_scalar(const float* __restrict__ a, const float* __restrict__ b,
                                      float* __restrict__ c, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""

add_float4 = compile_cuda(SOURCE, "add_float4")
add_scalar = compile_cuda(SOURCE, "add_scalar")


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a, b = a.contiguous(), b.contiguous()
        c = torch.empty_like(a)
        n = a.numel()
        if all(t.data_ptr() % ALIGNMENT == 0 for t in (a, b, c)):
            # One thread per float4, and at least enough threads for the tail.
            threads_needed = max(n // 4, n % 4, 1)
            add_float4(a, b, c, n, grid=(threads_needed + THREADS - 1) // THREADS, block=THREADS)
        else:
            add_scalar(a, b, c, n, grid=(max(n, 1) + THREADS - 1) // THREADS, block=THREADS)
        return c
