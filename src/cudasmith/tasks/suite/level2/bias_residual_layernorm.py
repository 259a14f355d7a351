"""Bias add, residual add and LayerNorm in float16, LayerNorm(x + bias + residual): BERT's post-LN output.

FasterTransformer's add-bias-residual-layernorm. The bias, scale and shift are random, and each row of
the residual has its own mean, far from zero.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "float16"
CONFIGS = [{"tokens": 13, "dim": 768}, {"tokens": 16384, "dim": 1024}, {"tokens": 65536, "dim": 1024}]
HIDDEN_CONFIGS = [{"tokens": range(2400, 3753), "dim": 1536}]


class Model(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-12) -> None:
        super().__init__()
        self.eps = eps
        self.bias = nn.Parameter(torch.randn(dim).to(torch.float16))
        self.weight = nn.Parameter((torch.randn(dim) * 0.2 + 1.0).to(torch.float16))
        self.shift = nn.Parameter((torch.randn(dim) * 0.5).to(torch.float16))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        h = x + self.bias + residual
        return F.layer_norm(h, (h.shape[-1],), self.weight, self.shift, self.eps)


def get_inputs(tokens: int = 13, dim: int = 768) -> list[torch.Tensor]:
    means = torch.randn(tokens, 1) * 8.0
    x = torch.randn(tokens, dim)
    residual = torch.randn(tokens, dim) * 2.0 + means
    return [x.to(torch.float16), residual.to(torch.float16)]


def get_init_inputs(tokens: int = 13, dim: int = 768) -> list:
    return [dim]


def flops(tokens: int, dim: int) -> int:
    return 10 * tokens * dim


def bytes_moved(tokens: int, dim: int) -> int:
    return 2 * (3 * tokens * dim + 3 * dim)
