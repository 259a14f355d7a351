"""Causal depthwise 1-D convolution (kernel 4, with bias) then SiLU over a bfloat16 (batch, dim, length) sequence.

Mamba's short convolution: each channel sees only its current and previous three positions (the
sequence is padded on the left only), then SiLU.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "bfloat16"
CONFIGS = [
    {"batch": 2, "dim": 64, "length": 33},
    {"batch": 8, "dim": 4096, "length": 2048},
    {"batch": 4, "dim": 5120, "length": 8192},
]
HIDDEN_CONFIGS = [{"batch": range(2, 5), "dim": 320, "length": range(621, 973)}]


class Model(nn.Module):
    def __init__(self, dim: int, kernel_size: int = 4) -> None:
        super().__init__()
        self.conv = nn.Conv1d(dim, dim, kernel_size, groups=dim, padding=kernel_size - 1)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(self.conv(x)[..., : x.shape[-1]])


def get_inputs(batch: int = 2, dim: int = 64, length: int = 33) -> list[torch.Tensor]:
    return [(torch.randn(batch, dim, length) * 3.0).to(torch.bfloat16)]


def get_init_inputs(batch: int = 2, dim: int = 64, length: int = 33) -> list:
    return [dim]


def flops(batch: int, dim: int, length: int) -> int:
    # Four multiply-adds and the bias per output, then SiLU (four operations).
    return (2 * 4 + 1 + 4) * batch * dim * length
