"""A solution that returns one element too many."""

import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.empty(a.numel() + 1)
