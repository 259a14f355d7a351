"""Cosine similarity between paired rows of two float32 matrices, one value in [-1, 1] per row.

The second matrix is a random multiple of the first plus noise, so that similarities span the whole
range from −1 to 1 rather than crowding around 0; rows are scaled from 10⁻² to 10².
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "float32"
CONFIGS = [{"rows": 10, "dim": 129}, {"rows": 65_537, "dim": 768}, {"rows": 131_072, "dim": 1024}]
HIDDEN_CONFIGS = [{"rows": range(800, 1251), "dim": 4099}]


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.cosine_similarity(a, b, dim=-1, eps=1e-8)


def get_inputs(rows: int = 10, dim: int = 129) -> list[torch.Tensor]:
    a = torch.randn(rows, dim) * 10.0 ** (torch.rand(rows, 1) * 4.0 - 2.0)
    b = a * torch.randn(rows, 1) * 3.0 + torch.randn(rows, dim) * a.std(dim=-1, keepdim=True)
    return [a, b]


def get_init_inputs(rows: int = 10, dim: int = 129) -> list:
    return []


def flops(rows: int, dim: int) -> int:
    return 6 * rows * dim


def bytes_moved(rows: int, dim: int) -> int:
    return 4 * (2 * rows * dim + rows)
