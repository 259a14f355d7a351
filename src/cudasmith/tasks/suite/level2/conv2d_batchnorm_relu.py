"""3×3 convolution (no bias), batch normalisation with batch statistics, then ReLU, in float32: a ResNet unit.

BatchNorm runs in training mode (statistics over the batch and the pixels) with a random scale and
shift, so that ReLU cuts a different fraction of each channel.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "in_channels": 3, "out_channels": 8, "height": 15, "width": 17},
    {"batch": 32, "in_channels": 64, "out_channels": 64, "height": 56, "width": 56},
    {"batch": 64, "in_channels": 128, "out_channels": 128, "height": 56, "width": 56},
]
HIDDEN_CONFIGS = [
    {
        "batch": range(4, 8),
        "in_channels": 32,
        "out_channels": 48,
        "height": range(24, 40),
        "width": range(23, 38),
    }
]


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False)
        self.norm = nn.BatchNorm2d(out_channels)
        nn.init.normal_(self.norm.weight)
        nn.init.normal_(self.norm.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.norm(self.conv(x)))


def get_inputs(
    batch: int = 2, in_channels: int = 3, out_channels: int = 8, height: int = 15, width: int = 17
) -> list[torch.Tensor]:
    return [torch.randn(batch, in_channels, height, width) + 0.5]


def get_init_inputs(
    batch: int = 2, in_channels: int = 3, out_channels: int = 8, height: int = 15, width: int = 17
) -> list:
    return [in_channels, out_channels]
