"""Multi-head attention without a mask in bfloat16, softmax(Q·Kᵀ / √d) · V, as in a ViT or BERT encoder.

The reference is the "eager" attention of Hugging Face models: scores in bfloat16, the softmax in
float32, probabilities rounded to bfloat16 before the product with V. Queries and keys are spread
enough that attention is peaked rather than near-uniform.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "bfloat16"
CONFIGS = [
    {"batch": 2, "heads": 3, "seq": 65, "head_dim": 32},
    {"batch": 32, "heads": 12, "seq": 197, "head_dim": 64},
    {"batch": 2, "heads": 16, "seq": 4096, "head_dim": 128},
]
HIDDEN_CONFIGS = [{"batch": range(2, 5), "heads": 8, "seq": range(266, 418), "head_dim": 80}]


class Model(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores = torch.matmul(q, k.transpose(-2, -1)) * q.shape[-1] ** -0.5
        # float32 softmax for bfloat16 inputs; a float64 run stays in float64.
        scores = scores.to(torch.promote_types(q.dtype, torch.float32))
        return torch.matmul(torch.softmax(scores, dim=-1).to(q.dtype), v)


class Expert(Model):
    """FlashAttention through PyTorch's scaled_dot_product_attention."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v)


EXPERT = Expert


def get_inputs(batch: int = 2, heads: int = 3, seq: int = 65, head_dim: int = 32) -> list[torch.Tensor]:
    shape = (batch, heads, seq, head_dim)
    return [
        (torch.randn(shape) * 1.5).to(torch.bfloat16),
        (torch.randn(shape) * 1.5).to(torch.bfloat16),
        torch.randn(shape).to(torch.bfloat16),
    ]


def get_init_inputs(batch: int = 2, heads: int = 3, seq: int = 65, head_dim: int = 32) -> list:
    return []
