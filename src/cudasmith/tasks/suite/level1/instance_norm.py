"""Instance normalisation of a float32 (N, C, H, W) image tensor with a learned per-channel affine.

Each (image, channel) plane is normalised over its pixels, as in style-transfer networks. Planes have
their own means and spreads; the scale and shift are random.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "channels": 16, "height": 17, "width": 19},
    {"batch": 16, "channels": 128, "height": 128, "width": 128},
    {"batch": 8, "channels": 64, "height": 512, "width": 512},
]
HIDDEN_CONFIGS = [{"batch": range(2, 5), "channels": 32, "height": range(80, 126), "width": range(79, 125)}]


class Model(nn.Module):
    def __init__(self, channels: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.norm = nn.InstanceNorm2d(channels, eps=eps, affine=True)
        nn.init.normal_(self.norm.weight)
        nn.init.normal_(self.norm.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs(batch: int = 2, channels: int = 16, height: int = 17, width: int = 19) -> list[torch.Tensor]:
    means = torch.randn(batch, channels, 1, 1) * 5.0
    spreads = torch.rand(batch, channels, 1, 1) * 3.0 + 0.2
    return [torch.randn(batch, channels, height, width) * spreads + means]


def get_init_inputs(batch: int = 2, channels: int = 16, height: int = 17, width: int = 19) -> list:
    return [channels]


def flops(batch: int, channels: int, height: int, width: int) -> int:
    return 8 * batch * channels * height * width


def bytes_moved(batch: int, channels: int, height: int, width: int) -> int:
    return 4 * (2 * batch * channels * height * width + 2 * channels)
