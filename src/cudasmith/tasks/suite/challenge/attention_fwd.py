"""Causal multi-head attention forward in bfloat16 at LLM sizes, against FlashAttention.

softmax(QKᵀ/√d + causal mask)V; the expert is FlashAttention through scaled_dot_product_attention.

The reference spells the computation out (scores, mask, softmax, weighted sum); the expert baseline is
FlashAttention, which nothing generated is known to beat at these sizes.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

DTYPE = "bfloat16"
CONFIGS = [
    {"batch": 1, "heads": 2, "seq": 129, "head_dim": 64},
    {"batch": 4, "heads": 16, "seq": 1000, "head_dim": 64},
    {"batch": 4, "heads": 16, "seq": 4096, "head_dim": 128},
]
HIDDEN_CONFIGS = [{"batch": range(2, 5), "heads": 12, "seq": range(1639, 2563), "head_dim": 64}]


class Model(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        seq = q.shape[-2]
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        future = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
        return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1) @ v


class FlashAttention(Model):
    """FlashAttention's fused kernel through scaled_dot_product_attention."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


EXPERT = FlashAttention


def get_inputs(batch: int = 1, heads: int = 2, seq: int = 129, head_dim: int = 64) -> list[torch.Tensor]:
    return [torch.randn(batch, heads, seq, head_dim).to(torch.bfloat16) for _ in range(3)]


def get_init_inputs(batch: int = 1, heads: int = 2, seq: int = 129, head_dim: int = 64) -> list:
    return []


def flops(batch: int, heads: int, seq: int, head_dim: int) -> int:
    # QKᵀ and PV over the causal half of the score matrix.
    return 2 * batch * heads * seq * seq * head_dim


def bytes_moved(batch: int, heads: int, seq: int, head_dim: int) -> int:
    return 4 * 2 * batch * heads * seq * head_dim
