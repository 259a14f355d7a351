"""Row-wise softmax as a CUDA kernel compiled at run time with NVRTC, for task level1/softmax.

    cudasmith eval examples/softmax_cuda.py --task level1/softmax

One block per row. A single pass keeps a running maximum and a running sum rescaled to it (online
softmax), the block merges the per-thread pairs with warp shuffles, and a second pass writes
exp(x - max) / sum. Rows are read twice; the second read mostly hits L2.
"""

import torch
from torch import nn

from cudasmith.runtime import compile_cuda

SOURCE = r"""
#define THREADS 512
#define WARPS (THREADS / 32)

__device__ __forceinline__ void merge(float& m, float& s, float other_m, float other_s) {
    float peak = fmaxf(m, other_m);
    if (peak == -INFINITY) { m = peak; return; }
    s = s * __expf(m - peak) + other_s * __expf(other_m - peak);
    m = peak;
}

extern "C" __global__ void __launch_bounds__(THREADS)
softmax_rows(const float* __restrict__ x, float* __restrict__ y, int cols) {
    const float* in = x + (long)blockIdx.x * cols;
    float* out = y + (long)blockIdx.x * cols;
    float m = -INFINITY, s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) {
        float v = in[c];
        if (v > m) { s = s * __expf(m - v) + 1.0f; m = v; }
        else { s += __expf(v - m); }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        float om = __shfl_xor_sync(0xffffffff, m, offset);
        float os = __shfl_xor_sync(0xffffffff, s, offset);
        merge(m, s, om, os);
    }
    __shared__ float warp_m[WARPS], warp_s[WARPS];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) { warp_m[warp] = m; warp_s[warp] = s; }
    __syncthreads();
    if (warp == 0) {
        m = lane < WARPS ? warp_m[lane] : -INFINITY;
        s = lane < WARPS ? warp_s[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1) {
            float om = __shfl_xor_sync(0xffffffff, m, offset);
            float os = __shfl_xor_sync(0xffffffff, s, offset);
            merge(m, s, om, os);
        }
        if (lane == 0) { warp_m[0] = m; warp_s[0] = s; }
    }
    __syncthreads();
    float peak = warp_m[0], inv = 1.0f / warp_s[0];
    for (int c = threadIdx.x; c < cols; c += THREADS) out[c] = __expf(in[c] - peak) * inv;
}
"""

softmax_rows = compile_cuda(SOURCE, "softmax_rows")


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        softmax_rows(x, y, x.shape[1], grid=x.shape[0], block=512)
        return y
