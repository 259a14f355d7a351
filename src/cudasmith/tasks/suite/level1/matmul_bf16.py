"""Matrix product C = A @ B in bfloat16 (M×K times K×N), accumulated in float32 as tensor cores do.

The top sizes are a transformer's projections; a running sum kept in bfloat16 is not accepted.
"""

import torch
from torch import nn

DTYPE = "bfloat16"
CONFIGS = [
    {"m": 257, "k": 255, "n": 259},
    {"m": 1000, "k": 4096, "n": 3001},
    {"m": 8192, "k": 8192, "n": 8192},
]
HIDDEN_CONFIGS = [{"m": range(308, 483), "k": range(800, 1251), "n": range(616, 965)}]


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_inputs(m: int = 257, k: int = 255, n: int = 259) -> list[torch.Tensor]:
    return [torch.randn(m, k).to(torch.bfloat16), torch.randn(k, n).to(torch.bfloat16)]


def get_init_inputs(m: int = 257, k: int = 255, n: int = 259) -> list:
    return []


def flops(m: int, k: int, n: int) -> int:
    return 2 * m * k * n


def bytes_moved(m: int, k: int, n: int) -> int:
    return 2 * (m * k + k * n + m * n)
