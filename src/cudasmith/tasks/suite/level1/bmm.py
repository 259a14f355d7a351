"""Batched matrix product C[i] = A[i] @ B[i] in float32 (batch × M×K times batch × K×N).

Shapes of attention's per-head products; every matrix in the batch is different.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"batch": 3, "m": 100, "k": 63, "n": 129},
    {"batch": 96, "m": 512, "k": 64, "n": 513},
    {"batch": 128, "m": 1024, "k": 128, "n": 1024},
]
HIDDEN_CONFIGS = [{"batch": range(5, 10), "m": range(240, 376), "k": range(205, 323), "n": range(160, 251)}]


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b)


def get_inputs(batch: int = 3, m: int = 100, k: int = 63, n: int = 129) -> list[torch.Tensor]:
    return [torch.randn(batch, m, k), torch.randn(batch, k, n)]


def get_init_inputs(batch: int = 3, m: int = 100, k: int = 63, n: int = 129) -> list:
    return []


def flops(batch: int, m: int, k: int, n: int) -> int:
    return 2 * batch * m * k * n


def bytes_moved(batch: int, m: int, k: int, n: int) -> int:
    return 4 * batch * (m * k + k * n + m * n)
