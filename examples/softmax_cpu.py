"""Row-wise softmax as a C function for the CPU, for task level1/softmax.

    cudasmith eval examples/softmax_cpu.py --task level1/softmax --device cpu

Each row: find the maximum, sum exp(x - max) while writing it, then scale by 1/sum. OpenMP spreads the
rows over the cores.
"""

import torch
from torch import nn

from cudasmith.runtime import compile_c

SOURCE = r"""
#include <math.h>

void softmax_rows(const float* x, float* y, long rows, long cols) {
    #pragma omp parallel for schedule(static)
    for (long r = 0; r < rows; ++r) {
        const float* in = x + r * cols;
        float* out = y + r * cols;
        float peak = -INFINITY;
        for (long c = 0; c < cols; ++c) peak = fmaxf(peak, in[c]);
        double total = 0.0;
        for (long c = 0; c < cols; ++c) {
            float e = expf(in[c] - peak);
            out[c] = e;
            total += e;
        }
        float scale = (float)(1.0 / total);
        for (long c = 0; c < cols; ++c) out[c] *= scale;
    }
}
"""

softmax_rows = compile_c(SOURCE, "softmax_rows")


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        softmax_rows(x, y, x.shape[0], x.shape[1])
        return y
