"""2-D convolution with bias over a float32 (N, C_in, H, W) image batch, "same" padding, stride 1 or 2.

ResNet's shapes: a 3×3 body convolution and the 7×7 stride-2 stem. TF32 tensor cores are not float32.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {
        "batch": 2,
        "in_channels": 3,
        "out_channels": 8,
        "height": 17,
        "width": 19,
        "kernel_size": 3,
        "stride": 1,
    },
    {
        "batch": 32,
        "in_channels": 64,
        "out_channels": 64,
        "height": 56,
        "width": 56,
        "kernel_size": 3,
        "stride": 1,
    },
    {
        "batch": 64,
        "in_channels": 3,
        "out_channels": 64,
        "height": 224,
        "width": 224,
        "kernel_size": 7,
        "stride": 2,
    },
]
HIDDEN_CONFIGS = [
    {
        "batch": range(4, 8),
        "in_channels": 48,
        "out_channels": 80,
        "height": range(26, 43),
        "width": range(23, 38),
        "kernel_size": 3,
        "stride": 2,
    }
]


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs(
    batch: int = 2,
    in_channels: int = 3,
    out_channels: int = 8,
    height: int = 17,
    width: int = 19,
    kernel_size: int = 3,
    stride: int = 1,
) -> list[torch.Tensor]:
    return [torch.randn(batch, in_channels, height, width)]


def get_init_inputs(
    batch: int = 2,
    in_channels: int = 3,
    out_channels: int = 8,
    height: int = 17,
    width: int = 19,
    kernel_size: int = 3,
    stride: int = 1,
) -> list:
    return [in_channels, out_channels, kernel_size, stride]
