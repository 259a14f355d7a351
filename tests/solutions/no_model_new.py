"""A solution that forgot to define ModelNew."""

from torch import nn


class Model(nn.Module):
    def forward(self, a, b):
        return a
