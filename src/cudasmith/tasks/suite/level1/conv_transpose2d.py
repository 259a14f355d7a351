"""Transposed 2-D convolution with bias (kernel 4, stride 2, padding 1) over a float32 batch: 2× upsampling.

A DCGAN / decoder upsampling layer; every output pixel gathers from a different subset of the kernel.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "in_channels": 8, "out_channels": 4, "height": 7, "width": 9},
    {"batch": 32, "in_channels": 256, "out_channels": 128, "height": 16, "width": 16},
    {"batch": 8, "in_channels": 512, "out_channels": 256, "height": 64, "width": 64},
]
HIDDEN_CONFIGS = [
    {
        "batch": range(2, 5),
        "in_channels": 64,
        "out_channels": 33,
        "height": range(20, 33),
        "width": range(18, 30),
    }
]


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size=4, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs(
    batch: int = 2, in_channels: int = 8, out_channels: int = 4, height: int = 7, width: int = 9
) -> list[torch.Tensor]:
    return [torch.randn(batch, in_channels, height, width)]


def get_init_inputs(
    batch: int = 2, in_channels: int = 8, out_channels: int = 4, height: int = 7, width: int = 9
) -> list:
    return [in_channels, out_channels]
