"""Layout change of a bfloat16 image batch from channels-first (N, C, H, W) to channels-last (N, H, W, C).

Pure data movement, as done before channels-last convolutions; the output is a new contiguous tensor.
"""

import torch
from torch import nn

DTYPE = "bfloat16"
CONFIGS = [
    {"batch": 2, "channels": 3, "height": 31, "width": 33},
    {"batch": 32, "channels": 64, "height": 112, "width": 112},
    {"batch": 16, "channels": 320, "height": 128, "width": 128},
]
HIDDEN_CONFIGS = [{"batch": range(4, 8), "channels": 96, "height": range(45, 73), "width": range(44, 70)}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.permute(0, 2, 3, 1).contiguous()


def get_inputs(batch: int = 2, channels: int = 3, height: int = 31, width: int = 33) -> list[torch.Tensor]:
    return [torch.randn(batch, channels, height, width).to(torch.bfloat16)]


def get_init_inputs(batch: int = 2, channels: int = 3, height: int = 31, width: int = 33) -> list:
    return []
