"""ReLU, CUDA C++ built with torch.utils.cpp_extension.load_inline: a grid-stride loop, one element per step.

Expected verdict: correct

Launched on PyTorch's current stream, so the judge's timer sees it. Building takes about 45 s (nvcc and
the host compiler over PyTorch's headers), paid once per build directory.
"""

import torch
from torch import nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

constexpr int THREADS = 256;
// Enough blocks to fill any current GPU several times over; the grid-stride loop covers the rest.
constexpr long long MAX_BLOCKS = 4096;

__global__ void relu_grid_stride(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = x[i];
        y[i] = (v > 0.0f || v != v) ? v : 0.0f;  // NaN stays NaN, as in torch.relu
    }
}

torch::Tensor relu(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "a float32 CUDA tensor");
    auto input = x.contiguous();
    auto output = torch::empty_like(input);
    long long n = input.numel();
    long long blocks = std::min(MAX_BLOCKS, std::max(1LL, (n + THREADS - 1) / THREADS));
    relu_grid_stride<<<blocks, THREADS, 0, c10::cuda::getCurrentCUDAStream()>>>(
        input.data_ptr<float>(), output.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return output;
}
"""

module = load_inline(
    name="cudasmith_candidate_relu_grid_stride",
    cpp_sources="torch::Tensor relu(torch::Tensor x);",
    cuda_sources=CUDA_SOURCE,
    functions=["relu"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return module.relu(x)
