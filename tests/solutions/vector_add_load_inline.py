"""An honest vector sum built with torch.utils.cpp_extension.load_inline (task level1/vector_add)."""

import torch
from torch import nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

torch::Tensor vector_add(torch::Tensor a, torch::Tensor b) {
    auto out = torch::empty_like(a);
    long n = a.numel();
    add_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""

module = load_inline(
    name="cudasmith_test_vector_add",
    cpp_sources="torch::Tensor vector_add(torch::Tensor a, torch::Tensor b);",
    cuda_sources=CUDA_SOURCE,
    functions=["vector_add"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return module.vector_add(a.contiguous(), b.contiguous())
