"""Group normalisation of a float32 (N, C, H, W) tensor with a learned per-channel scale and shift.

As in diffusion U-Nets (32 groups). Channels have their own means and spreads, so that the statistics
must be taken per group over channels and pixels; the scale and shift are random.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "channels": 32, "groups": 8, "height": 9, "width": 11},
    {"batch": 4, "channels": 320, "groups": 32, "height": 64, "width": 64},
    {"batch": 8, "channels": 640, "groups": 32, "height": 64, "width": 64},
]
HIDDEN_CONFIGS = [
    {"batch": range(2, 5), "channels": 96, "groups": 24, "height": range(45, 73), "width": range(24, 40)}
]


class Model(nn.Module):
    def __init__(self, channels: int, groups: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels, eps=eps)
        nn.init.normal_(self.norm.weight)
        nn.init.normal_(self.norm.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs(
    batch: int = 2, channels: int = 32, groups: int = 8, height: int = 9, width: int = 11
) -> list[torch.Tensor]:
    means = torch.randn(1, channels, 1, 1) * 4.0
    spreads = torch.rand(1, channels, 1, 1) * 3.0 + 0.2
    return [torch.randn(batch, channels, height, width) * spreads + means]


def get_init_inputs(
    batch: int = 2, channels: int = 32, groups: int = 8, height: int = 9, width: int = 11
) -> list:
    return [channels, groups]


def flops(batch: int, channels: int, groups: int, height: int, width: int) -> int:
    return 8 * batch * channels * height * width


def bytes_moved(batch: int, channels: int, groups: int, height: int, width: int) -> int:
    return 4 * (2 * batch * channels * height * width + 2 * channels)
