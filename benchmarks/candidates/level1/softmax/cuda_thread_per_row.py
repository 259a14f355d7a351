"""Row softmax, NVRTC CUDA: one thread per row, three serial loops. Honest and very slow.

Expected verdict: correct

The naive kernel of the batch: a few thousand threads for the whole matrix (about 30 per SM on the
4096-row config, 2 blocks on the 255-row hidden one), each walking its row three times with loads that
no two threads of a warp share. Correct, and expected to be far slower than the online kernel: the
bottom of the speed ladder that the optimize checks rely on.
"""

import torch
from torch import nn

from cudasmith.runtime import compile_cuda

THREADS = 128

SOURCE = r"""
extern "C" __global__ void softmax_thread_per_row(const float* __restrict__ x, float* __restrict__ y,
                                                  int rows, int cols) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* in = x + (long long)row * cols;
    float* out = y + (long long)row * cols;
    float peak = -INFINITY;
    for (int c = 0; c < cols; ++c) peak = fmaxf(peak, in[c]);
    // One serial sum over up to 50257 terms: float would drift by ~1e-5 of the row, a double does not.
    double total = 0.0;
    for (int c = 0; c < cols; ++c) total += expf(in[c] - peak);
    float inv = (float)(1.0 / total);
    for (int c = 0; c < cols; ++c) out[c] = expf(in[c] - peak) * inv;
}
"""

softmax_thread_per_row = compile_cuda(SOURCE, "softmax_thread_per_row")


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        softmax_thread_per_row(x, y, rows, cols, grid=(rows + THREADS - 1) // THREADS, block=THREADS)
        return y
