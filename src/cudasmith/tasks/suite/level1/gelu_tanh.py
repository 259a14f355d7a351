"""GELU in its tanh approximation (GPT-2's and Gemma's) of a bfloat16 matrix.

Inputs are signed with a spread of 3, so that the curved region around zero and both tails (where it
tends to x or to 0) occur. The tanh form is the task, though it differs from the exact x · Φ(x) by at
most 5e-4, below bfloat16's resolution there.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "bfloat16"
CONFIGS = [{"tokens": 13, "dim": 768}, {"tokens": 1025, "dim": 3072}, {"tokens": 16384, "dim": 16384}]
HIDDEN_CONFIGS = [{"tokens": range(1639, 2563), "dim": 1537}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x, approximate="tanh")


def get_inputs(tokens: int = 13, dim: int = 768) -> list[torch.Tensor]:
    return [(torch.randn(tokens, dim) * 3.0).to(torch.bfloat16)]


def get_init_inputs(tokens: int = 13, dim: int = 768) -> list:
    return []


def flops(tokens: int, dim: int) -> int:
    # 0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³))): seven arithmetic operations and one tanh.
    return 8 * tokens * dim


def bytes_moved(tokens: int, dim: int) -> int:
    return 2 * 2 * tokens * dim
