"""One level of a U-Net: convolutions, down, a bottleneck, up and a skip connection, in float32.

A double convolution (3×3 conv, GroupNorm, SiLU, twice), max-pool down, a double convolution at half
resolution, transposed-convolution up, concatenation with the skip connection and a final double
convolution.

Odd image sizes make the upsampled map one pixel short of the skip connection; it is zero-padded on the
bottom and right, as common U-Net implementations do.
"""

import torch
import torch.nn.functional as F
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "channels": 8, "size": 17},
    {"batch": 4, "channels": 64, "size": 127},
    {"batch": 8, "channels": 64, "size": 256},
]
HIDDEN_CONFIGS = [{"batch": range(2, 5), "channels": 32, "size": 95}]
GROUPS = 8


class DoubleConv(nn.Module):
    def __init__(self, channels_in: int, channels_out: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for c_in in (channels_in, channels_out):
            norm = nn.GroupNorm(GROUPS, channels_out)
            nn.init.normal_(norm.weight, mean=1.0, std=0.3)
            nn.init.normal_(norm.bias, std=0.3)
            layers += [nn.Conv2d(c_in, channels_out, 3, padding=1), norm, nn.SiLU()]
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class Model(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.down = DoubleConv(channels, channels)
        self.bottom = DoubleConv(channels, 2 * channels)
        self.up = nn.ConvTranspose2d(2 * channels, channels, 2, stride=2)
        self.out = DoubleConv(2 * channels, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = self.down(x)
        up = self.up(self.bottom(F.max_pool2d(skip, 2)))
        up = F.pad(up, (0, skip.shape[-1] - up.shape[-1], 0, skip.shape[-2] - up.shape[-2]))
        return self.out(torch.cat([skip, up], dim=1))


def get_inputs(batch: int = 2, channels: int = 8, size: int = 17) -> list[torch.Tensor]:
    return [torch.randn(batch, channels, size, size)]


def get_init_inputs(batch: int = 2, channels: int = 8, size: int = 17) -> list:
    return [channels]
