"""A small GPT forward pass from token ids to logits, in float32.

Token and position embeddings, pre-LayerNorm causal decoder blocks, a final LayerNorm and the tied
language-model head.

The top config is GPT-2 small (12 layers, width 768, vocabulary 50257, 1024 positions).
"""

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "seq": 31, "vocab": 1000, "dim": 64, "heads": 4, "layers": 2},
    {"batch": 4, "seq": 256, "vocab": 8191, "dim": 384, "heads": 6, "layers": 6},
    {"batch": 4, "seq": 1024, "vocab": 50257, "dim": 768, "heads": 12, "layers": 12},
]
HIDDEN_CONFIGS = [
    {"batch": range(2, 5), "seq": range(160, 251), "vocab": 5003, "dim": 256, "heads": 8, "layers": 4}
]

Attention = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


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


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = _layer_norm(dim), _layer_norm(dim)
        self.qkv, self.proj = _linear(dim, 3 * dim), _linear(dim, dim)
        self.fc, self.out = _linear(dim, 4 * dim), _linear(4 * dim, dim)

    def forward(self, x: torch.Tensor, attention: Attention) -> torch.Tensor:
        batch, seq, dim = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(batch, seq, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        x = x + self.proj(attention(q, k, v).transpose(1, 2).reshape(batch, seq, dim))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Model(nn.Module):
    def __init__(self, vocab: int, positions: int, dim: int, heads: int, layers: int) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        nn.init.normal_(self.tokens.weight, std=0.3)
        self.positions = nn.Embedding(positions, dim)
        nn.init.normal_(self.positions.weight, std=0.3)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln_f = _layer_norm(dim)

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        seq = q.shape[-2]
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        future = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
        return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1) @ v

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        seq = token_ids.shape[1]
        x = self.tokens(token_ids) + self.positions(torch.arange(seq, device=token_ids.device))
        for block in self.blocks:
            x = block(x, self.attention)
        return self.ln_f(x) @ self.tokens.weight.t()


class SDPA(Model):
    """The same model with attention through PyTorch's fused SDPA kernels (FlashAttention, memory-efficient)."""

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


EXPERT = SDPA


def get_inputs(
    batch: int = 2, seq: int = 31, vocab: int = 1000, dim: int = 64, heads: int = 4, layers: int = 2
) -> list[torch.Tensor]:
    return [torch.randint(0, vocab, (batch, seq))]


def get_init_inputs(
    batch: int = 2, seq: int = 31, vocab: int = 1000, dim: int = 64, heads: int = 4, layers: int = 2
) -> list:
    return [vocab, seq, dim, heads, layers]


def flops(batch: int, seq: int, vocab: int, dim: int, heads: int, layers: int) -> int:
    # Per block the four projections, and QKᵀ and PV over the causal triangle only (the FLOP counter
    # would count the full square the reference computes); then the language-model head.
    block = 24 * batch * seq * dim * dim + 2 * batch * seq * (seq + 1) * dim
    return layers * block + 2 * batch * seq * dim * vocab
