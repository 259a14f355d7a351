"""A GPT-2 style decoder block: pre-LayerNorm causal self-attention and a GELU MLP, in float32.

Weights are drawn with unit-variance fan-in scaling and the LayerNorm scales and shifts are random, so
attention is neither uniform nor one-hot and no sub-layer is close to the identity.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "seq": 33, "dim": 64, "heads": 4},
    {"batch": 4, "seq": 500, "dim": 384, "heads": 6},
    {"batch": 8, "seq": 1024, "dim": 768, "heads": 12},
]
HIDDEN_CONFIGS = [{"batch": range(2, 5), "seq": range(205, 323), "dim": 512, "heads": 8}]


def _linear(fan_in: int, fan_out: int) -> nn.Linear:
    layer = nn.Linear(fan_in, fan_out)
    nn.init.normal_(layer.weight, std=fan_in**-0.5)
    nn.init.normal_(layer.bias, std=0.1)
    return layer


def _layer_norm(dim: int) -> nn.LayerNorm:
    norm = nn.LayerNorm(dim)
    nn.init.normal_(norm.weight, mean=1.0, std=0.3)
    nn.init.normal_(norm.bias, std=0.3)
    return norm


class Model(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = _layer_norm(dim), _layer_norm(dim)
        self.qkv, self.proj = _linear(dim, 3 * dim), _linear(dim, dim)
        self.fc, self.out = _linear(dim, 4 * dim), _linear(4 * dim, dim)

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        seq = q.shape[-2]
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        future = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
        return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1) @ v

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, dim = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(batch, seq, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        x = x + self.proj(self.attention(q, k, v).transpose(1, 2).reshape(batch, seq, dim))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class SDPA(Model):
    """The same block with attention through PyTorch's fused SDPA kernels (FlashAttention, memory-efficient)."""

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


EXPERT = SDPA


def get_inputs(batch: int = 2, seq: int = 33, dim: int = 64, heads: int = 4) -> list[torch.Tensor]:
    return [torch.randn(batch, seq, dim)]


def get_init_inputs(batch: int = 2, seq: int = 33, dim: int = 64, heads: int = 4) -> list:
    return [dim, heads]


def flops(batch: int, seq: int, dim: int, heads: int) -> int:
    # The four projections, and QKᵀ and PV over the causal triangle only (the FLOP counter would
    # count the full square the reference computes, more than a causal kernel needs).
    return 24 * batch * seq * dim * dim + 2 * batch * seq * (seq + 1) * dim
