"""Honest: a C ReLU built lazily on the first call, by a build slower than a call's time limit (the judge's
tests give calls 2 s): a build is a build wherever it happens (level1/relu)."""

import time

import torch
from torch import nn

from cudasmith.runtime import compile_c

# Longer than the call limit the tests set, as a load_inline build (~45 s) is longer than a call's.
BUILD_S = 3.0


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.relu = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.relu is None:
            time.sleep(BUILD_S)
            self.relu = compile_c(
                "void relu(const float* x, float* y, long n) { for (long i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : 0.0f; }",
                "relu",
            )
        x = x.contiguous()
        y = torch.empty_like(x)
        self.relu(x, y, x.numel())
        return y
