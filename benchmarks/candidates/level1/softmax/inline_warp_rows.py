"""Row softmax, CUDA C++ built with torch.utils.cpp_extension.load_inline: one warp per row, online softmax.

Expected verdict: correct

Eight rows per block of 256 threads, each row owned by one warp: a running max and rescaled sum per
lane, merged with shuffles (no shared memory, no barriers), then a second pass writes the result. Meant
for short rows: on 32000-column rows one warp per row has little memory traffic in flight. Building takes about
45 s (nvcc and the host compiler over PyTorch's headers), paid once per build directory.
"""

import torch
from torch import nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

constexpr int WARPS_PER_BLOCK = 8;

__device__ __forceinline__ void merge(float& m, float& s, float other_m, float other_s) {
    float peak = fmaxf(m, other_m);
    if (peak == -INFINITY) return;
    s = s * __expf(m - peak) + other_s * __expf(other_m - peak);
    m = peak;
}

__global__ void softmax_warp_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int row = blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;  // whole warps leave together: the shuffles below stay full-warp
    const float* in = x + (long long)row * cols;
    float* out = y + (long long)row * cols;
    float m = -INFINITY, s = 0.0f;
    for (int c = lane; c < cols; c += 32) {
        float v = in[c];
        if (v > m) { s = s * __expf(m - v) + 1.0f; m = v; }
        else { s += __expf(v - m); }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        float other_m = __shfl_xor_sync(0xffffffff, m, offset);
        float other_s = __shfl_xor_sync(0xffffffff, s, offset);
        merge(m, s, other_m, other_s);
    }
    float inv = 1.0f / s;
    for (int c = lane; c < cols; c += 32) out[c] = __expf(in[c] - m) * inv;
}

torch::Tensor softmax_rows(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat32, "a 2-D float32 CUDA tensor");
    auto input = x.contiguous();
    auto output = torch::empty_like(input);
    int rows = input.size(0), cols = input.size(1);
    int blocks = (rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    softmax_warp_rows<<<blocks, WARPS_PER_BLOCK * 32, 0, c10::cuda::getCurrentCUDAStream()>>>(
        input.data_ptr<float>(), output.data_ptr<float>(), rows, cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return output;
}
"""

module = load_inline(
    name="cudasmith_candidate_softmax_warp_rows",
    cpp_sources="torch::Tensor softmax_rows(torch::Tensor x);",
    cuda_sources=CUDA_SOURCE,
    functions=["softmax_rows"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return module.softmax_rows(x)
