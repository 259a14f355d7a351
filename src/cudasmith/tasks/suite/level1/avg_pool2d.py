"""2-D average pooling (kernel 3, stride 1, padding 1) over a float32 batch, not counting the padding.

Inception's pooling branch: on the border a window averages only the pixels inside the image (4 or 6
of them, not 9), so dividing by 9 everywhere is wrong.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "channels": 4, "height": 15, "width": 17},
    {"batch": 32, "channels": 192, "height": 35, "width": 35},
    {"batch": 128, "channels": 256, "height": 35, "width": 35},
]
HIDDEN_CONFIGS = [{"batch": range(4, 8), "channels": 40, "height": range(32, 53), "width": range(31, 50)}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.avg_pool2d(x, kernel_size=3, stride=1, padding=1, count_include_pad=False)


def get_inputs(batch: int = 2, channels: int = 4, height: int = 15, width: int = 17) -> list[torch.Tensor]:
    return [torch.randn(batch, channels, height, width) + 0.5]


def get_init_inputs(batch: int = 2, channels: int = 4, height: int = 15, width: int = 17) -> list:
    return []


def flops(batch: int, channels: int, height: int, width: int) -> int:
    # Nine additions and a division per output pixel.
    return 10 * batch * channels * height * width
