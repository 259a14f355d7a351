"""Pairwise Euclidean distances between the rows of two float32 point sets (M×D and N×D) into an M×N matrix.

As in k-nearest-neighbour search and clustering. Some pairs are near-duplicates, whose small distances
the expansion ‖x‖² + ‖y‖² − 2x·y computes with cancellation.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"m": 63, "n": 100, "dim": 16},
    {"m": 4096, "n": 4095, "dim": 128},
    {"m": 16384, "n": 16384, "dim": 256},
]
HIDDEN_CONFIGS = [{"m": range(800, 1251), "n": range(410, 643), "dim": 3}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.cdist(x, y, p=2.0)


def get_inputs(m: int = 63, n: int = 100, dim: int = 16) -> list[torch.Tensor]:
    x = torch.randn(m, dim) + 2.0
    y = torch.randn(n, dim) + 2.0
    # A few points of y sit very close to points of x.
    near = min(m, n) // 8
    y[:near] = x[torch.randperm(m)[:near]] + torch.randn(near, dim) * 1e-2
    return [x, y[torch.randperm(n)]]


def get_init_inputs(m: int = 63, n: int = 100, dim: int = 16) -> list:
    return []


def flops(m: int, n: int, dim: int) -> int:
    # A difference, a square and an addition per coordinate of each pair, and a square root per pair.
    return 3 * m * n * dim + m * n


def bytes_moved(m: int, n: int, dim: int) -> int:
    return 4 * (m * dim + n * dim + m * n)
