"""Rotary position embedding (RoPE, rotate-half form) applied to bfloat16 queries and keys, as in Llama 3.

Queries (batch, seq, heads, head_dim) and keys (batch, seq, kv_heads, head_dim) are rotated by angles
position · base^(−2i/head_dim) with base 500000, at positions that start at a random offset per sequence
(as after a KV cache). The cos/sin tables are float32 buffers, cast to bfloat16 before use.
"""

import torch
from torch import nn

DTYPE = "bfloat16"
CONFIGS = [
    {"batch": 2, "seq": 17, "heads": 4, "kv_heads": 2, "head_dim": 32},
    {"batch": 4, "seq": 2048, "heads": 32, "kv_heads": 8, "head_dim": 128},
    {"batch": 8, "seq": 8192, "heads": 32, "kv_heads": 8, "head_dim": 128},
]
HIDDEN_CONFIGS = [{"batch": range(2, 5), "seq": range(800, 1251), "heads": 28, "kv_heads": 4, "head_dim": 64}]


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


class Model(nn.Module):
    # Buffers (register_buffer below), declared so that readers and type checkers see tensors.
    cos: torch.Tensor
    sin: torch.Tensor

    def __init__(self, head_dim: int, max_positions: int, base: float = 500000.0) -> None:
        super().__init__()
        inv_freq = base ** -(torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
        angles = torch.arange(max_positions, dtype=torch.float64)[:, None] * inv_freq[None, :]
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos().float())
        self.register_buffer("sin", angles.sin().float())

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        cos = self.cos[positions].unsqueeze(2).to(q.dtype)
        sin = self.sin[positions].unsqueeze(2).to(q.dtype)
        return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin


def get_inputs(
    batch: int = 2, seq: int = 17, heads: int = 4, kv_heads: int = 2, head_dim: int = 32
) -> list[torch.Tensor]:
    offsets = torch.randint(0, seq + 1, (batch, 1))
    return [
        torch.randn(batch, seq, heads, head_dim).to(torch.bfloat16),
        torch.randn(batch, seq, kv_heads, head_dim).to(torch.bfloat16),
        offsets + torch.arange(seq),
    ]


def get_init_inputs(
    batch: int = 2, seq: int = 17, heads: int = 4, kv_heads: int = 2, head_dim: int = 32
) -> list:
    return [head_dim, 2 * seq]


def flops(batch: int, seq: int, heads: int, kv_heads: int, head_dim: int) -> int:
    # Two products and a sum per element of q and k.
    return 3 * batch * seq * (heads + kv_heads) * head_dim
