"""Matrix product C = A @ B in float32 (M×K times K×N).

TF32 tensor cores are not float32: their error exceeds the tolerance at these sizes.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"m": 256, "k": 255, "n": 257},
    {"m": 1000, "k": 1024, "n": 999},
    {"m": 4096, "k": 4096, "n": 4096},
]
HIDDEN_CONFIGS = [{"m": range(308, 483), "k": range(615, 963), "n": range(207, 325)}]


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_inputs(m: int = 256, k: int = 255, n: int = 257) -> list[torch.Tensor]:
    return [torch.randn(m, k), torch.randn(k, n)]


def get_init_inputs(m: int = 256, k: int = 255, n: int = 257) -> list:
    return []


def flops(m: int, k: int, n: int) -> int:
    return 2 * m * k * n


def bytes_moved(m: int, k: int, n: int) -> int:
    return 4 * (m * k + k * n + m * n)
