"""3×3 convolution with bias, ReLU, then 2×2 max pooling (stride 2), in float32: a VGG block.

Odd sizes among the configs: the pooling drops the last row or column of an odd-sized map.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "in_channels": 3, "out_channels": 8, "height": 16, "width": 19},
    {"batch": 16, "in_channels": 64, "out_channels": 128, "height": 112, "width": 112},
    {"batch": 32, "in_channels": 128, "out_channels": 256, "height": 56, "width": 56},
]
HIDDEN_CONFIGS = [
    {
        "batch": range(2, 5),
        "in_channels": 48,
        "out_channels": 64,
        "height": range(36, 58),
        "width": range(31, 50),
    }
]


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.max_pool2d(torch.relu(self.conv(x)), kernel_size=2, stride=2)


def get_inputs(
    batch: int = 2, in_channels: int = 3, out_channels: int = 8, height: int = 16, width: int = 19
) -> list[torch.Tensor]:
    return [torch.randn(batch, in_channels, height, width)]


def get_init_inputs(
    batch: int = 2, in_channels: int = 3, out_channels: int = 8, height: int = 16, width: int = 19
) -> list:
    return [in_channels, out_channels]
