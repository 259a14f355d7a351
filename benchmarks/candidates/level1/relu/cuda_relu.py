"""ReLU, NVRTC CUDA: float4 loads and stores over the flattened matrix, the last n % 4 elements one by one.

Expected verdict: correct

NaN stays NaN, as in torch.relu (a bare `x > 0 ? x : 0` would turn it into 0). Pointers that are not
16-byte aligned take a scalar kernel.
"""

import torch
from torch import nn

from cudasmith.runtime import compile_cuda

THREADS = 256
# float4 accesses need 16-byte aligned addresses.
ALIGNMENT = 16

SOURCE = r"""
__device__ __forceinline__ float relu(float v) { return (v > 0.0f || v != v) ? v : 0.0f; }

extern "C" __global__ void relu_float4(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long n4 = n / 4;
    if (i < n4) {
        float4 v = reinterpret_cast<const float4*>(x)[i];
        reinterpret_cast<float4*>(y)[i] = make_float4(relu(v.x), relu(v.y), relu(v.z), relu(v.w));
    }
    if (i < n - n4 * 4) y[n4 * 4 + i] = relu(x[n4 * 4 + i]);
}

extern "C" __global__ void relu_scalar(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = relu(x[i]);
}
"""

relu_float4 = compile_cuda(SOURCE, "relu_float4")
relu_scalar = compile_cuda(SOURCE, "relu_scalar")


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        if x.data_ptr() % ALIGNMENT == 0 and y.data_ptr() % ALIGNMENT == 0:
            threads_needed = max(n // 4, n % 4, 1)
            relu_float4(x, y, n, grid=(threads_needed + THREADS - 1) // THREADS, block=THREADS)
        else:
            relu_scalar(x, y, n, grid=(max(n, 1) + THREADS - 1) // THREADS, block=THREADS)
        return y
