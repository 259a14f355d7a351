"""SiLU (swish), x · sigmoid(x), of a bfloat16 matrix.

Inputs are signed with a spread of 4, so that the function's minimum near x = -1.28, its linear tail
for large x and its vanishing tail for very negative x all occur.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "bfloat16"
CONFIGS = [{"tokens": 11, "dim": 1000}, {"tokens": 2047, "dim": 4096}, {"tokens": 16384, "dim": 14336}]
HIDDEN_CONFIGS = [{"tokens": range(2400, 3753), "dim": 5632}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(x)


def get_inputs(tokens: int = 11, dim: int = 1000) -> list[torch.Tensor]:
    return [(torch.randn(tokens, dim) * 4.0).to(torch.bfloat16)]


def get_init_inputs(tokens: int = 11, dim: int = 1000) -> list:
    return []


def flops(tokens: int, dim: int) -> int:
    # x / (1 + exp(-x)): three arithmetic operations and one exp.
    return 4 * tokens * dim


def bytes_moved(tokens: int, dim: int) -> int:
    return 2 * 2 * tokens * dim
