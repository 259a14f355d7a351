"""A problem in plain KernelBench form: no configs, no extensions."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a + b


N = 4099


def get_inputs():
    return [torch.randn(N), torch.randn(N)]


def get_init_inputs():
    return []
