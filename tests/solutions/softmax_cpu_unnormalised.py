"""Wrong on purpose: exp(x - max) without dividing by the sum (task level1/softmax)."""

import torch
from torch import nn

from cudasmith.runtime import compile_c

SOURCE = r"""
#include <math.h>
void softmax_rows(const float* x, float* y, long rows, long cols) {
    for (long r = 0; r < rows; ++r) {
        float peak = -INFINITY;
        for (long c = 0; c < cols; ++c) peak = fmaxf(peak, x[r * cols + c]);
        for (long c = 0; c < cols; ++c) y[r * cols + c] = expf(x[r * cols + c] - peak);
    }
}
"""
softmax_rows = compile_c(SOURCE, "softmax_rows")


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        softmax_rows(x.contiguous(), y, x.shape[0], x.shape[1])
        return y
