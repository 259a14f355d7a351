"""Row softmax, NVRTC CUDA: one block per row, online max and sum in one read, float4 loads when rows allow.

Expected verdict: correct

Meant to be the fastest softmax of the batch. A first pass keeps a running maximum and a sum rescaled to
it (online softmax), merged across the block with warp shuffles; a second pass reads the row again (from
L2 where it is still there) and writes exp(x - max) / sum. Rows whose length is a multiple of 4 are read
and written as float4 (every row then starts on a 16-byte boundary); other rows element by element.
"""

import torch
from torch import nn

from cudasmith.runtime import compile_cuda

# Threads per block: one block per row.
THREADS = 512
# A float4 row start is 16-byte aligned only when the row length is a multiple of this.
VECTOR = 4

SOURCE = r"""
#define THREADS 512
#define WARPS (THREADS / 32)

__device__ __forceinline__ void merge(float& m, float& s, float other_m, float other_s) {
    float peak = fmaxf(m, other_m);
    if (peak == -INFINITY) return;  // both empty
    s = s * __expf(m - peak) + other_s * __expf(other_m - peak);
    m = peak;
}

__device__ __forceinline__ void push(float& m, float& s, float v) {
    if (v > m) { s = s * __expf(m - v) + 1.0f; m = v; }
    else { s += __expf(v - m); }
}

template <int VEC>
__global__ void __launch_bounds__(THREADS)
softmax_online(const float* __restrict__ x, float* __restrict__ y, int cols) {
    const float* in = x + (long long)blockIdx.x * cols;
    float* out = y + (long long)blockIdx.x * cols;
    float m = -INFINITY, s = 0.0f;
    if (VEC == 4) {
        const float4* in4 = reinterpret_cast<const float4*>(in);
        for (int c = threadIdx.x; c < cols / 4; c += THREADS) {
            float4 v = in4[c];
            push(m, s, v.x); push(m, s, v.y); push(m, s, v.z); push(m, s, v.w);
        }
    } else {
        for (int c = threadIdx.x; c < cols; c += THREADS) push(m, s, in[c]);
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        float other_m = __shfl_xor_sync(0xffffffff, m, offset);
        float other_s = __shfl_xor_sync(0xffffffff, s, offset);
        merge(m, s, other_m, other_s);
    }
    __shared__ float warp_m[WARPS], warp_s[WARPS];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) { warp_m[warp] = m; warp_s[warp] = s; }
    __syncthreads();
    if (warp == 0) {
        m = lane < WARPS ? warp_m[lane] : -INFINITY;
        s = lane < WARPS ? warp_s[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1) {
            float other_m = __shfl_xor_sync(0xffffffff, m, offset);
            float other_s = __shfl_xor_sync(0xffffffff, s, offset);
            merge(m, s, other_m, other_s);
        }
        if (lane == 0) { warp_m[0] = m; warp_s[0] = s; }
    }
    __syncthreads();
    float peak = warp_m[0], inv = 1.0f / warp_s[0];
    if (VEC == 4) {
        const float4* in4 = reinterpret_cast<const float4*>(in);
        float4* out4 = reinterpret_cast<float4*>(out);
        for (int c = threadIdx.x; c < cols / 4; c += THREADS) {
            float4 v = in4[c];
            out4[c] = make_float4(__expf(v.x - peak) * inv, __expf(v.y - peak) * inv,
                                  __expf(v.z - peak) * inv, __expf(v.w - peak) * inv);
        }
    } else {
        for (int c = threadIdx.x; c < cols; c += THREADS) out[c] = __expf(in[c] - peak) * inv;
    }
}
"""

softmax_vector = compile_cuda(SOURCE, "softmax_online<4>")
softmax_scalar = compile_cuda(SOURCE, "softmax_online<1>")


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        aligned = cols % VECTOR == 0 and x.data_ptr() % 16 == 0 and y.data_ptr() % 16 == 0
        kernel = softmax_vector if aligned else softmax_scalar
        kernel(x, y, cols, grid=rows, block=THREADS)
        return y
