"""Leaky ReLU of a float32 4-D activation tensor: x for x ≥ 0, 0.01 · x otherwise.

Inputs are signed and wide-ranged, so that passing the input through (or plain ReLU) is wrong.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "channels": 3, "height": 31, "width": 33},
    {"batch": 16, "channels": 64, "height": 112, "width": 112},
    {"batch": 64, "channels": 256, "height": 56, "width": 56},
]
HIDDEN_CONFIGS = [{"batch": range(2, 5), "channels": 96, "height": range(60, 95), "width": range(61, 98)}]


class Model(nn.Module):
    def __init__(self, negative_slope: float = 0.01) -> None:
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(x, self.negative_slope)


def get_inputs(batch: int = 2, channels: int = 3, height: int = 31, width: int = 33) -> list[torch.Tensor]:
    return [torch.randn(batch, channels, height, width) * 10.0]


def get_init_inputs(batch: int = 2, channels: int = 3, height: int = 31, width: int = 33) -> list:
    return []


def flops(batch: int, channels: int, height: int, width: int) -> int:
    return 2 * batch * channels * height * width


def bytes_moved(batch: int, channels: int, height: int, width: int) -> int:
    return 2 * 4 * batch * channels * height * width
