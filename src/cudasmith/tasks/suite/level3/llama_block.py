"""A Llama-style decoder block with RoPE, grouped-query attention and SwiGLU, in float32.

RMSNorm, rotary position embeddings, grouped-query causal attention (several query heads share each
key/value head) and a SwiGLU MLP, with residuals.

The MLP width is 8/3 of the model width, as in Llama, so it is not a multiple of 32.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "seq": 33, "dim": 64, "heads": 4, "kv_heads": 2},
    {"batch": 2, "seq": 1000, "dim": 512, "heads": 8, "kv_heads": 2},
    {"batch": 2, "seq": 2048, "dim": 2048, "heads": 16, "kv_heads": 4},
]
HIDDEN_CONFIGS = [{"batch": range(2, 5), "seq": range(240, 376), "dim": 384, "heads": 6, "kv_heads": 3}]
ROPE_BASE = 10000.0
EPS = 1e-5


class RMSNorm(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.3 * torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * self.weight


def _linear(fan_in: int, fan_out: int) -> nn.Linear:
    layer = nn.Linear(fan_in, fan_out, bias=False)
    nn.init.normal_(layer.weight, std=fan_in**-0.5)
    return layer


def rotate(x: torch.Tensor) -> torch.Tensor:
    """Rotary embedding of x [batch, heads, seq, head_dim], pairing dimension i with i + head_dim/2."""
    seq, head_dim = x.shape[-2:]
    inv_freq = ROPE_BASE ** -(torch.arange(0, head_dim, 2, dtype=x.dtype, device=x.device) / head_dim)
    angles = torch.arange(seq, dtype=x.dtype, device=x.device)[:, None] * inv_freq
    cos, sin = torch.cat([angles, angles], -1).cos(), torch.cat([angles, angles], -1).sin()
    first, second = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-second, first], dim=-1) * sin


class Model(nn.Module):
    def __init__(self, dim: int, heads: int, kv_heads: int) -> None:
        super().__init__()
        self.heads, self.kv_heads, head_dim = heads, kv_heads, dim // heads
        hidden = 8 * dim // 3
        self.attn_norm, self.mlp_norm = RMSNorm(dim), RMSNorm(dim)
        self.q, self.kv = _linear(dim, dim), _linear(dim, 2 * kv_heads * head_dim)
        self.o = _linear(dim, dim)
        self.gate, self.up, self.down = _linear(dim, hidden), _linear(dim, hidden), _linear(hidden, dim)

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        seq = q.shape[-2]
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        future = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
        return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1) @ v

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, dim = x.shape
        h = self.attn_norm(x)
        q = self.q(h).view(batch, seq, self.heads, -1).transpose(1, 2)
        k, v = self.kv(h).view(batch, seq, 2, self.kv_heads, -1).permute(2, 0, 3, 1, 4)
        group = self.heads // self.kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        attended = self.attention(rotate(q), rotate(k), v)
        x = x + self.o(attended.transpose(1, 2).reshape(batch, seq, dim))
        h = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class SDPA(Model):
    """The same block with attention through PyTorch's fused SDPA kernels (FlashAttention, memory-efficient)."""

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


EXPERT = SDPA


def get_inputs(
    batch: int = 2, seq: int = 33, dim: int = 64, heads: int = 4, kv_heads: int = 2
) -> list[torch.Tensor]:
    return [torch.randn(batch, seq, dim)]


def get_init_inputs(batch: int = 2, seq: int = 33, dim: int = 64, heads: int = 4, kv_heads: int = 2) -> list:
    return [dim, heads, kv_heads]


def flops(batch: int, seq: int, dim: int, heads: int, kv_heads: int) -> int:
    # Projections (Q, K and V for the shared heads, O, and the three SwiGLU matrices), and QKᵀ and PV
    # over the causal triangle only (the FLOP counter would count the full square).
    kv_dim = kv_heads * (dim // heads)
    projections = 2 * batch * seq * (2 * dim * dim + 2 * dim * kv_dim + 3 * dim * (8 * dim // 3))
    return projections + 2 * batch * seq * (seq + 1) * dim
