"""Scatter-add of float32 rows: out = x, then out[index[i]] += source[i] for every i (index_add along dim 0).

As in graph message passing. The indices are skewed towards low rows (like node degrees), so that many
updates land on the same rows and naive parallel writes lose some of them.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"rows": 100, "dim": 33, "updates": 500},
    {"rows": 10_007, "dim": 128, "updates": 200_000},
    {"rows": 100_000, "dim": 128, "updates": 1_000_000},
]
HIDDEN_CONFIGS = [{"rows": range(2400, 3753), "dim": 64, "updates": range(40016, 62528)}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor, index: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
        return x.index_add(0, index, source)


def get_inputs(rows: int = 100, dim: int = 33, updates: int = 500) -> list[torch.Tensor]:
    index = (torch.rand(updates) ** 3 * rows).long()
    return [torch.randn(rows, dim), index, torch.randn(updates, dim)]


def get_init_inputs(rows: int = 100, dim: int = 33, updates: int = 500) -> list:
    return []


def flops(rows: int, dim: int, updates: int) -> int:
    return updates * dim


def bytes_moved(rows: int, dim: int, updates: int) -> int:
    return 4 * (2 * rows * dim + updates * dim) + 8 * updates
