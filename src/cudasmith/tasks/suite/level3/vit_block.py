"""A Vision Transformer encoder block: bidirectional self-attention and a GELU MLP, in float32.

Pre-LayerNorm multi-head self-attention and MLP with residuals, over a class token plus image patches.

The top config is ViT-B/16 at 224×224 (197 tokens, width 768, 12 heads).
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "tokens": 17, "dim": 64, "heads": 4},
    {"batch": 16, "tokens": 197, "dim": 384, "heads": 6},
    {"batch": 64, "tokens": 197, "dim": 768, "heads": 12},
]
HIDDEN_CONFIGS = [{"batch": range(4, 8), "tokens": range(52, 83), "dim": 192, "heads": 3}]


def _linear(fan_in: int, fan_out: int) -> nn.Linear:
    layer = nn.Linear(fan_in, fan_out)
    nn.init.normal_(layer.weight, std=fan_in**-0.5)
    nn.init.normal_(layer.bias, std=0.1)
    return layer


def _layer_norm(dim: int) -> nn.LayerNorm:
    norm = nn.LayerNorm(dim, eps=1e-6)
    nn.init.normal_(norm.weight, mean=1.0, std=0.3)
    nn.init.normal_(norm.bias, std=0.3)
    return norm


class Model(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = _layer_norm(dim), _layer_norm(dim)
        self.qkv, self.proj = _linear(dim, 3 * dim), _linear(dim, dim)
        self.fc1, self.fc2 = _linear(dim, 4 * dim), _linear(4 * dim, dim)

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        return torch.softmax(scores, dim=-1) @ v

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, dim = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(batch, tokens, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        x = x + self.proj(self.attention(q, k, v).transpose(1, 2).reshape(batch, tokens, dim))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class SDPA(Model):
    """The same block with attention through PyTorch's fused SDPA kernels (FlashAttention, memory-efficient)."""

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v)


EXPERT = SDPA


def get_inputs(batch: int = 2, tokens: int = 17, dim: int = 64, heads: int = 4) -> list[torch.Tensor]:
    return [torch.randn(batch, tokens, dim)]


def get_init_inputs(batch: int = 2, tokens: int = 17, dim: int = 64, heads: int = 4) -> list:
    return [dim, heads]
