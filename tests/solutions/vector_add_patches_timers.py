"""An honest C vector sum that, at import, makes every timer it can reach report 1000x less time.

The harness keeps its own references to its clocks, so its measurements must not change.
"""

import time

import torch
from torch import nn

from cudasmith.runtime import compile_c

_real_perf_counter = time.perf_counter
_real_monotonic = time.monotonic
time.perf_counter = lambda: _real_perf_counter() / 1000
time.monotonic = lambda: _real_monotonic() / 1000
time.perf_counter_ns = lambda: 0
torch.cuda.synchronize = lambda *args, **kwargs: None
torch.cuda.Event.elapsed_time = lambda self, end: 1e-6

SOURCE = r"""
void vector_add(const float* a, const float* b, float* out, long n) {
    #pragma omp parallel for simd
    for (long i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
"""
vector_add = compile_c(SOURCE, "vector_add")


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        vector_add(a.contiguous(), b.contiguous(), out, a.numel())
        return out
