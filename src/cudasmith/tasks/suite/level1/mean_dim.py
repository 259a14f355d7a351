"""Mean over the middle dimension of a float32 (batch, seq, dim) tensor: mean pooling of token features.

The reduced dimension is strided in memory (each output element reads one value per token, `dim`
apart), unlike a row reduction.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "seq": 17, "dim": 100},
    {"batch": 32, "seq": 512, "dim": 768},
    {"batch": 64, "seq": 2048, "dim": 1024},
]
HIDDEN_CONFIGS = [{"batch": range(4, 8), "seq": range(266, 418), "dim": 1031}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=1)


def get_inputs(batch: int = 2, seq: int = 17, dim: int = 100) -> list[torch.Tensor]:
    return [torch.randn(batch, seq, dim) * 2.0 + torch.randn(batch, 1, dim)]


def get_init_inputs(batch: int = 2, seq: int = 17, dim: int = 100) -> list:
    return []


def flops(batch: int, seq: int, dim: int) -> int:
    return batch * seq * dim + batch * dim


def bytes_moved(batch: int, seq: int, dim: int) -> int:
    return 4 * (batch * seq * dim + batch * dim)
