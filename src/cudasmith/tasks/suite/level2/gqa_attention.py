"""Causal grouped-query attention in bfloat16: several query heads share each key/value head (Llama 3, Qwen2).

Query head h reads key/value head h // (heads / kv_heads). The reference repeats the key/value heads and
runs Hugging Face's "eager" attention (float32 softmax); a kernel should read each shared head once.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "bfloat16"
CONFIGS = [
    {"batch": 1, "heads": 4, "kv_heads": 2, "seq": 50, "head_dim": 32},
    {"batch": 4, "heads": 28, "kv_heads": 4, "seq": 1024, "head_dim": 128},
    {"batch": 1, "heads": 32, "kv_heads": 8, "seq": 4096, "head_dim": 128},
]
HIDDEN_CONFIGS = [{"batch": range(1, 4), "heads": 12, "kv_heads": 2, "seq": range(240, 376), "head_dim": 64}]


class Model(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        group = q.shape[1] // k.shape[1]
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        seq = q.shape[-2]
        scores = torch.matmul(q, k.transpose(-2, -1)) * q.shape[-1] ** -0.5
        future = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
        # float32 softmax for bfloat16 inputs; a float64 run stays in float64.
        scores = scores.to(torch.promote_types(q.dtype, torch.float32)).masked_fill(future, float("-inf"))
        return torch.matmul(torch.softmax(scores, dim=-1).to(q.dtype), v)


class Expert(Model):
    """FlashAttention through scaled_dot_product_attention, causal, with grouped key/value heads."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)


EXPERT = Expert


def get_inputs(
    batch: int = 1, heads: int = 4, kv_heads: int = 2, seq: int = 50, head_dim: int = 32
) -> list[torch.Tensor]:
    return [
        (torch.randn(batch, heads, seq, head_dim) * 1.5).to(torch.bfloat16),
        (torch.randn(batch, kv_heads, seq, head_dim) * 1.5).to(torch.bfloat16),
        torch.randn(batch, kv_heads, seq, head_dim).to(torch.bfloat16),
    ]


def get_init_inputs(
    batch: int = 1, heads: int = 4, kv_heads: int = 2, seq: int = 50, head_dim: int = 32
) -> list:
    return []


def flops(batch: int, heads: int, kv_heads: int, seq: int, head_dim: int) -> int:
    # Q·Kᵀ and P·V over the seq·(seq + 1)/2 query-key pairs that are not masked.
    return 2 * 2 * batch * heads * head_dim * seq * (seq + 1) // 2
