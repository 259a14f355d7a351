"""2-D max pooling (kernel 3, stride 2, padding 1) over a float32 (N, C, H, W) batch, as in ResNet's stem.

Inputs are signed: the padding is −∞, not zero, and windows on the border that hold only negative
values show the difference.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "channels": 4, "height": 15, "width": 17},
    {"batch": 32, "channels": 64, "height": 112, "width": 112},
    {"batch": 128, "channels": 64, "height": 112, "width": 112},
]
HIDDEN_CONFIGS = [{"batch": range(2, 5), "channels": 24, "height": range(60, 95), "width": range(58, 93)}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.max_pool2d(x, kernel_size=3, stride=2, padding=1)


def get_inputs(batch: int = 2, channels: int = 4, height: int = 15, width: int = 17) -> list[torch.Tensor]:
    return [torch.randn(batch, channels, height, width) - 1.0]


def get_init_inputs(batch: int = 2, channels: int = 4, height: int = 15, width: int = 17) -> list:
    return []


def flops(batch: int, channels: int, height: int, width: int) -> int:
    # Nine comparisons per output pixel.
    return 9 * batch * channels * ((height - 1) // 2 + 1) * ((width - 1) // 2 + 1)
