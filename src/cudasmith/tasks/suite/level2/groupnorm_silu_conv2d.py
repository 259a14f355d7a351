"""GroupNorm (32 groups), SiLU, then a 3×3 convolution with bias, in float32: a Stable Diffusion ResNet block's start.

Channels have their own means and spreads and the norm's scale and shift are random, so that the
statistics and the activation's curved region both matter.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "channels": 32, "out_channels": 16, "height": 9, "width": 11},
    {"batch": 2, "channels": 320, "out_channels": 320, "height": 64, "width": 64},
    {"batch": 8, "channels": 640, "out_channels": 640, "height": 32, "width": 32},
]
HIDDEN_CONFIGS = [
    {
        "batch": range(2, 5),
        "channels": 96,
        "out_channels": 64,
        "height": range(29, 48),
        "width": range(28, 45),
    }
]


class Model(nn.Module):
    def __init__(self, channels: int, out_channels: int, groups: int = 32) -> None:
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels, eps=1e-6)
        nn.init.normal_(self.norm.weight)
        nn.init.normal_(self.norm.bias)
        self.conv = nn.Conv2d(channels, out_channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(F.silu(self.norm(x)))


def get_inputs(
    batch: int = 2, channels: int = 32, out_channels: int = 16, height: int = 9, width: int = 11
) -> list[torch.Tensor]:
    means = torch.randn(1, channels, 1, 1) * 4.0
    spreads = torch.rand(1, channels, 1, 1) * 3.0 + 0.2
    return [torch.randn(batch, channels, height, width) * spreads + means]


def get_init_inputs(
    batch: int = 2, channels: int = 32, out_channels: int = 16, height: int = 9, width: int = 11
) -> list:
    return [channels, out_channels]


def bytes_moved(batch: int, channels: int, out_channels: int, height: int, width: int) -> int:
    # The input, the norm's parameters, the convolution's weights and bias, and the output.
    weights = out_channels * channels * 9 + out_channels + 2 * channels
    return 4 * (batch * channels * height * width + weights + batch * out_channels * height * width)
