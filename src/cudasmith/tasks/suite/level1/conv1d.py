"""1-D convolution with bias over a float32 (N, C_in, L) sequence, stride 1, "same" padding.

As in speech and audio front ends. Weights and bias are the default (uniform) initialisation.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "in_channels": 3, "out_channels": 5, "length": 127, "kernel_size": 3},
    {"batch": 16, "in_channels": 256, "out_channels": 256, "length": 4095, "kernel_size": 5},
    {"batch": 8, "in_channels": 512, "out_channels": 512, "length": 16000, "kernel_size": 3},
]
HIDDEN_CONFIGS = [
    {
        "batch": range(2, 5),
        "in_channels": 80,
        "out_channels": 192,
        "length": range(2400, 3753),
        "kernel_size": 7,
    }
]


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs(
    batch: int = 2, in_channels: int = 3, out_channels: int = 5, length: int = 127, kernel_size: int = 3
) -> list[torch.Tensor]:
    return [torch.randn(batch, in_channels, length)]


def get_init_inputs(
    batch: int = 2, in_channels: int = 3, out_channels: int = 5, length: int = 127, kernel_size: int = 3
) -> list:
    return [in_channels, out_channels, kernel_size]
