"""Depthwise 2-D convolution (one filter per channel) with bias over a float32 (N, C, H, W) batch.

MobileNet's 3×3 (stride 2) and ConvNeXt's 7×7 shapes, "same" padding. Memory-bound, unlike a dense
convolution: each input value feeds only k² products.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "channels": 8, "height": 15, "width": 17, "kernel_size": 3, "stride": 1},
    {"batch": 32, "channels": 144, "height": 112, "width": 112, "kernel_size": 3, "stride": 2},
    {"batch": 32, "channels": 192, "height": 56, "width": 56, "kernel_size": 7, "stride": 1},
]
HIDDEN_CONFIGS = [
    {
        "batch": range(2, 5),
        "channels": 40,
        "height": range(36, 58),
        "width": range(34, 55),
        "kernel_size": 5,
        "stride": 1,
    }
]


class Model(nn.Module):
    def __init__(self, channels: int, kernel_size: int, stride: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(
            channels, channels, kernel_size, stride=stride, padding=kernel_size // 2, groups=channels
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs(
    batch: int = 2,
    channels: int = 8,
    height: int = 15,
    width: int = 17,
    kernel_size: int = 3,
    stride: int = 1,
) -> list[torch.Tensor]:
    return [torch.randn(batch, channels, height, width)]


def get_init_inputs(
    batch: int = 2,
    channels: int = 8,
    height: int = 15,
    width: int = 17,
    kernel_size: int = 3,
    stride: int = 1,
) -> list:
    return [channels, kernel_size, stride]
