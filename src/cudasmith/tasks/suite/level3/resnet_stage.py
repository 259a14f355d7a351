"""A ResNet-50 stage of bottleneck blocks with batch norm, in float32.

Bottleneck blocks (1×1, 3×3, 1×1 convolutions with batch norm and ReLU), the first one downsampling by 2
with a projection shortcut.

Batch norm uses batch statistics (training mode, as the harness runs models), and its scales and shifts
are random, so that no block reduces to its shortcut.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "channels": 32, "width": 16, "blocks": 2, "size": 15},
    {"batch": 16, "channels": 512, "width": 256, "blocks": 3, "size": 27},
    {"batch": 32, "channels": 256, "width": 128, "blocks": 4, "size": 56},
]
HIDDEN_CONFIGS = [{"batch": range(3, 6), "channels": 64, "width": range(51, 81), "blocks": 3, "size": 57}]


def _batch_norm(channels: int) -> nn.BatchNorm2d:
    norm = nn.BatchNorm2d(channels)
    nn.init.normal_(norm.weight, mean=1.0, std=0.3)
    nn.init.normal_(norm.bias, std=0.3)
    return norm


class Bottleneck(nn.Module):
    def __init__(self, channels: int, width: int, stride: int) -> None:
        super().__init__()
        out = 4 * width
        self.body = nn.Sequential(
            nn.Conv2d(channels, width, 1, bias=False),
            _batch_norm(width),
            nn.ReLU(),
            nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False),
            _batch_norm(width),
            nn.ReLU(),
            nn.Conv2d(width, out, 1, bias=False),
            _batch_norm(out),
        )
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or channels != out:
            self.shortcut = nn.Sequential(
                nn.Conv2d(channels, out, 1, stride=stride, bias=False), _batch_norm(out)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.shortcut(x))


class Model(nn.Module):
    def __init__(self, channels: int, width: int, blocks: int) -> None:
        super().__init__()
        self.blocks = nn.Sequential(
            *(Bottleneck(channels if i == 0 else 4 * width, width, 2 if i == 0 else 1) for i in range(blocks))
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(x)


def get_inputs(
    batch: int = 2, channels: int = 32, width: int = 16, blocks: int = 2, size: int = 15
) -> list[torch.Tensor]:
    return [torch.relu(torch.randn(batch, channels, size, size))]


def get_init_inputs(
    batch: int = 2, channels: int = 32, width: int = 16, blocks: int = 2, size: int = 15
) -> list:
    return [channels, width, blocks]
