"""BERT encoder layers (post-LayerNorm attention and GELU MLP) over padded sequences, in float32.

The attention mask hides each sequence's padding.

Sequence lengths run from one token to the full length, and the padding positions hold large values, so
attending to them, or normalising over them, changes the answer.
"""

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"batch": 3, "seq": 19, "dim": 64, "heads": 4, "layers": 2},
    {"batch": 16, "seq": 128, "dim": 384, "heads": 6, "layers": 4},
    {"batch": 32, "seq": 512, "dim": 768, "heads": 12, "layers": 12},
]
HIDDEN_CONFIGS = [{"batch": range(4, 8), "seq": range(61, 98), "dim": 256, "heads": 4, "layers": 3}]


def _linear(fan_in: int, fan_out: int) -> nn.Linear:
    layer = nn.Linear(fan_in, fan_out)
    nn.init.normal_(layer.weight, std=fan_in**-0.5)
    nn.init.normal_(layer.bias, std=0.1)
    return layer


def _layer_norm(dim: int) -> nn.LayerNorm:
    norm = nn.LayerNorm(dim, eps=1e-12)
    nn.init.normal_(norm.weight, mean=1.0, std=0.3)
    nn.init.normal_(norm.bias, std=0.3)
    return norm


class Layer(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = _linear(dim, 3 * dim), _linear(dim, dim)
        self.fc1, self.fc2 = _linear(dim, 4 * dim), _linear(4 * dim, dim)
        self.norm1, self.norm2 = _layer_norm(dim), _layer_norm(dim)

    def forward(
        self, x: torch.Tensor, keep: torch.Tensor, attention: Callable[..., torch.Tensor]
    ) -> torch.Tensor:
        batch, seq, dim = x.shape
        q, k, v = self.qkv(x).view(batch, seq, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        x = self.norm1(x + self.proj(attention(q, k, v, keep).transpose(1, 2).reshape(batch, seq, dim)))
        return self.norm2(x + self.fc2(F.gelu(self.fc1(x))))


class Model(nn.Module):
    def __init__(self, dim: int, heads: int, layers: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Layer(dim, heads) for _ in range(layers))

    def attention(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, keep: torch.Tensor
    ) -> torch.Tensor:
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        return torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1) @ v

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(x.shape[1], device=x.device)
        keep = (positions < lengths[:, None])[:, None, None, :]
        for layer in self.layers:
            x = layer(x, keep, self.attention)
        return x


class SDPA(Model):
    """The same encoder with masked attention through PyTorch's fused SDPA kernels (memory-efficient)."""

    def attention(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, keep: torch.Tensor
    ) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)


EXPERT = SDPA


def get_inputs(
    batch: int = 3, seq: int = 19, dim: int = 64, heads: int = 4, layers: int = 2
) -> list[torch.Tensor]:
    lengths = torch.randint(1, seq + 1, (batch,))
    lengths[0], lengths[-1] = 1, seq
    padding = (torch.arange(seq)[None, :] >= lengths[:, None]).unsqueeze(-1)
    x = torch.where(padding, 50.0 * torch.randn(batch, seq, dim), torch.randn(batch, seq, dim))
    return [x, lengths]


def get_init_inputs(batch: int = 3, seq: int = 19, dim: int = 64, heads: int = 4, layers: int = 2) -> list:
    return [dim, heads, layers]
