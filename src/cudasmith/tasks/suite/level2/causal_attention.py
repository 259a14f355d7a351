"""Causal multi-head attention in bfloat16: each position attends to itself and the positions before it.

As in GPT-2 and Llama prefill. The reference is Hugging Face's "eager" attention: scores in bfloat16,
the masked softmax in float32, probabilities rounded to bfloat16 before the product with V. Only the
lower triangle needs computing, and the FLOP count says so.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "bfloat16"
CONFIGS = [
    {"batch": 2, "heads": 4, "seq": 77, "head_dim": 32},
    {"batch": 8, "heads": 12, "seq": 1024, "head_dim": 64},
    {"batch": 1, "heads": 32, "seq": 4096, "head_dim": 128},
]
HIDDEN_CONFIGS = [{"batch": range(2, 5), "heads": 6, "seq": range(408, 640), "head_dim": 64}]


class Model(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        seq = q.shape[-2]
        scores = torch.matmul(q, k.transpose(-2, -1)) * q.shape[-1] ** -0.5
        future = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
        # float32 softmax for bfloat16 inputs; a float64 run stays in float64.
        scores = scores.to(torch.promote_types(q.dtype, torch.float32)).masked_fill(future, float("-inf"))
        return torch.matmul(torch.softmax(scores, dim=-1).to(q.dtype), v)


class Expert(Model):
    """FlashAttention through PyTorch's scaled_dot_product_attention, causal."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


EXPERT = Expert


def get_inputs(batch: int = 2, heads: int = 4, seq: int = 77, head_dim: int = 32) -> list[torch.Tensor]:
    shape = (batch, heads, seq, head_dim)
    return [
        (torch.randn(shape) * 1.5).to(torch.bfloat16),
        (torch.randn(shape) * 1.5).to(torch.bfloat16),
        torch.randn(shape).to(torch.bfloat16),
    ]


def get_init_inputs(batch: int = 2, heads: int = 4, seq: int = 77, head_dim: int = 32) -> list:
    return []


def flops(batch: int, heads: int, seq: int, head_dim: int) -> int:
    # Q·Kᵀ and P·V over the seq·(seq + 1)/2 query-key pairs that are not masked.
    return 2 * 2 * batch * heads * head_dim * seq * (seq + 1) // 2
