"""Tall-skinny matrix product C = A @ B in float32: many rows, a long K and only a few output columns.

As in a LoRA down-projection or a classifier head over many tokens: N is far too small to fill a GPU
with output tiles, so the work must be split along M and K.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"m": 1000, "k": 255, "n": 13},
    {"m": 16384, "k": 4096, "n": 16},
    {"m": 65536, "k": 4096, "n": 64},
]
HIDDEN_CONFIGS = [{"m": range(6552, 10240), "k": range(820, 1283), "n": range(5, 10)}]


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_inputs(m: int = 1000, k: int = 255, n: int = 13) -> list[torch.Tensor]:
    return [torch.randn(m, k), torch.randn(k, n)]


def get_init_inputs(m: int = 1000, k: int = 255, n: int = 13) -> list:
    return []


def flops(m: int, k: int, n: int) -> int:
    return 2 * m * k * n


def bytes_moved(m: int, k: int, n: int) -> int:
    return 4 * (m * k + k * n + m * n)
