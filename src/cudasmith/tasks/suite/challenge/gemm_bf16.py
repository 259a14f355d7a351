"""Matrix product C = A @ B in bfloat16 at sizes where cuBLAS runs near peak, against cuBLAS.

Products are accumulated in float32 and the result rounded to bfloat16.

The eager reference is cuBLAS itself; nothing generated is known to beat it here.
"""

import torch
from torch import nn

DTYPE = "bfloat16"
CONFIGS = [
    {"m": 256, "k": 255, "n": 257},
    {"m": 4095, "k": 4096, "n": 4097},
    {"m": 8192, "k": 8192, "n": 8192},
]
HIDDEN_CONFIGS = [{"m": range(2400, 3753), "k": range(1637, 2560), "n": range(4002, 6255)}]


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


class CuBLAS(Model):
    """cuBLAS's bf16 GEMM through torch.matmul: the eager reference already is the expert."""


EXPERT = CuBLAS


def get_inputs(m: int = 256, k: int = 255, n: int = 257) -> list[torch.Tensor]:
    return [torch.randn(m, k).to(torch.bfloat16), torch.randn(k, n).to(torch.bfloat16)]


def get_init_inputs(m: int = 256, k: int = 255, n: int = 257) -> list:
    return []


def flops(m: int, k: int, n: int) -> int:
    return 2 * m * k * n


def bytes_moved(m: int, k: int, n: int) -> int:
    return 2 * (m * k + k * n + m * n)
