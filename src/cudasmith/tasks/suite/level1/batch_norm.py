"""Batch normalisation of a float32 (N, C, H, W) tensor with batch statistics (training mode).

Each channel is normalised by the mean and biased variance over the batch and the pixels, then scaled
and shifted by random per-channel parameters. Channels have means far from zero and spreads that differ.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"batch": 4, "channels": 8, "height": 13, "width": 15},
    {"batch": 32, "channels": 64, "height": 112, "width": 112},
    {"batch": 64, "channels": 256, "height": 56, "width": 56},
]
HIDDEN_CONFIGS = [{"batch": range(5, 10), "channels": 48, "height": range(23, 38), "width": range(26, 43)}]


class Model(nn.Module):
    def __init__(self, channels: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.norm = nn.BatchNorm2d(channels, eps=eps)
        nn.init.normal_(self.norm.weight)
        nn.init.normal_(self.norm.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs(batch: int = 4, channels: int = 8, height: int = 13, width: int = 15) -> list[torch.Tensor]:
    means = torch.randn(1, channels, 1, 1) * 10.0
    spreads = torch.rand(1, channels, 1, 1) * 3.0 + 0.2
    return [torch.randn(batch, channels, height, width) * spreads + means]


def get_init_inputs(batch: int = 4, channels: int = 8, height: int = 13, width: int = 15) -> list:
    return [channels]


def flops(batch: int, channels: int, height: int, width: int) -> int:
    return 8 * batch * channels * height * width


def bytes_moved(batch: int, channels: int, height: int, width: int) -> int:
    return 4 * (2 * batch * channels * height * width + 2 * channels)
