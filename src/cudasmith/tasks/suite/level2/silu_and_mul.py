"""SwiGLU's gating in bfloat16: silu(x[:, :d]) · x[:, d:] for a fused gate-up projection output of width 2d.

vLLM's silu_and_mul: memory-bound, two halves of each row read and one written. Inputs are spread
widely enough that SiLU's curved region and both tails occur.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "bfloat16"
CONFIGS = [{"tokens": 7, "dim": 1000}, {"tokens": 4096, "dim": 14336}, {"tokens": 16384, "dim": 14336}]
HIDDEN_CONFIGS = [{"tokens": range(266, 418), "dim": 11008}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = x.chunk(2, dim=-1)
        return F.silu(gate) * up


def get_inputs(tokens: int = 7, dim: int = 1000) -> list[torch.Tensor]:
    return [(torch.randn(tokens, 2 * dim) * 3.0).to(torch.bfloat16)]


def get_init_inputs(tokens: int = 7, dim: int = 1000) -> list:
    return []


def flops(tokens: int, dim: int) -> int:
    # SiLU (three operations and an exp) and the product.
    return 5 * tokens * dim


def bytes_moved(tokens: int, dim: int) -> int:
    return 2 * 3 * tokens * dim
