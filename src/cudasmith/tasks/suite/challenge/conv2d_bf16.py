"""3×3 convolution of channels-last bfloat16 images at ResNet layer sizes, against cuDNN.

Stride 1, padding 1, with bias.

The eager reference is cuDNN itself (products accumulated in float32, the result rounded to bfloat16);
nothing generated is known to beat it here.
"""

import torch
from torch import nn

DTYPE = "bfloat16"
CONFIGS = [
    {"batch": 2, "channels": 16, "out_channels": 32, "size": 15},
    {"batch": 32, "channels": 64, "out_channels": 64, "size": 56},
    {"batch": 128, "channels": 128, "out_channels": 128, "size": 28},
]
HIDDEN_CONFIGS = [{"batch": range(6, 11), "channels": 96, "out_channels": 80, "size": 33}]


class Model(nn.Module):
    def __init__(self, channels: int, out_channels: int) -> None:
        super().__init__()
        conv = nn.Conv2d(channels, out_channels, 3, padding=1)
        # torch's stubs of Module.to lack the memory_format keyword that Module.to takes.
        self.conv = conv.to(dtype=torch.bfloat16, memory_format=torch.channels_last)  # type: ignore[call-overload]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


class CuDNN(Model):
    """cuDNN's convolution through nn.Conv2d: the eager reference already is the expert."""


EXPERT = CuDNN


def get_inputs(
    batch: int = 2, channels: int = 16, out_channels: int = 32, size: int = 15
) -> list[torch.Tensor]:
    x = torch.randn(batch, channels, size, size).to(torch.bfloat16)
    return [x.contiguous(memory_format=torch.channels_last)]


def get_init_inputs(batch: int = 2, channels: int = 16, out_channels: int = 32, size: int = 15) -> list:
    return [channels, out_channels]


def bytes_moved(batch: int, channels: int, out_channels: int, size: int) -> int:
    return 2 * (batch * size * size * (channels + out_channels) + 9 * channels * out_channels + out_channels)
