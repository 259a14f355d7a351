"""An EfficientNet stage of MBConv blocks with squeeze-and-excitation, in float32.

Each block: 1×1 expansion, depthwise 5×5 convolution, batch norm and SiLU, squeeze-and-excitation, 1×1
projection; the first one downsamples by 2, the others are residual.

Batch norm uses batch statistics (training mode, as the harness runs models) with random scales and
shifts; depthwise convolutions and the per-image excitation gates are what generic GEMM kernels miss.
"""

import torch
import torch.nn.functional as F
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "channels": 16, "out_channels": 24, "blocks": 2, "size": 15},
    {"batch": 32, "channels": 40, "out_channels": 80, "blocks": 3, "size": 28},
    {"batch": 128, "channels": 80, "out_channels": 112, "blocks": 3, "size": 28},
]
HIDDEN_CONFIGS = [{"batch": range(4, 8), "channels": 24, "out_channels": 40, "blocks": 2, "size": 33}]
EXPAND, KERNEL, SQUEEZE = 6, 5, 4


def _batch_norm(channels: int) -> nn.BatchNorm2d:
    norm = nn.BatchNorm2d(channels)
    nn.init.normal_(norm.weight, mean=1.0, std=0.3)
    nn.init.normal_(norm.bias, std=0.3)
    return norm


class MBConv(nn.Module):
    def __init__(self, channels: int, out_channels: int, stride: int) -> None:
        super().__init__()
        wide = EXPAND * channels
        self.expand = nn.Sequential(nn.Conv2d(channels, wide, 1, bias=False), _batch_norm(wide), nn.SiLU())
        self.depthwise = nn.Sequential(
            nn.Conv2d(wide, wide, KERNEL, stride=stride, padding=KERNEL // 2, groups=wide, bias=False),
            _batch_norm(wide),
            nn.SiLU(),
        )
        self.squeeze = nn.Conv2d(wide, max(1, channels // SQUEEZE), 1)
        self.excite = nn.Conv2d(max(1, channels // SQUEEZE), wide, 1)
        self.project = nn.Sequential(nn.Conv2d(wide, out_channels, 1, bias=False), _batch_norm(out_channels))
        self.residual = stride == 1 and channels == out_channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.depthwise(self.expand(x))
        h = h * torch.sigmoid(self.excite(F.silu(self.squeeze(h.mean(dim=(2, 3), keepdim=True)))))
        h = self.project(h)
        return x + h if self.residual else h


class Model(nn.Module):
    def __init__(self, channels: int, out_channels: int, blocks: int) -> None:
        super().__init__()
        self.blocks = nn.Sequential(
            *(
                MBConv(channels if i == 0 else out_channels, out_channels, 2 if i == 0 else 1)
                for i in range(blocks)
            )
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(x)


def get_inputs(
    batch: int = 2, channels: int = 16, out_channels: int = 24, blocks: int = 2, size: int = 15
) -> list[torch.Tensor]:
    return [torch.randn(batch, channels, size, size)]


def get_init_inputs(
    batch: int = 2, channels: int = 16, out_channels: int = 24, blocks: int = 2, size: int = 15
) -> list:
    return [channels, out_channels, blocks]
