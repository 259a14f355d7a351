"""One decode step of grouped-query attention in bfloat16: one query token per sequence against a KV cache.

Each sequence has its own length; cache slots past it hold stale, large values that must not be read.
Query head h reads key/value head h // (heads / kv_heads); the softmax is in float32. The lengths are
a random permutation of a fixed spread (from 1 to the cache size), so the bytes a kernel must read are
known exactly.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "bfloat16"
CONFIGS = [
    {"batch": 3, "heads": 4, "kv_heads": 2, "max_len": 100, "head_dim": 32},
    {"batch": 16, "heads": 32, "kv_heads": 8, "max_len": 4096, "head_dim": 128},
    {"batch": 16, "heads": 64, "kv_heads": 8, "max_len": 8192, "head_dim": 128},
]
HIDDEN_CONFIGS = [{"batch": range(4, 8), "heads": 28, "kv_heads": 4, "max_len": 3001, "head_dim": 128}]


class Model(nn.Module):
    def forward(
        self, q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, lengths: torch.Tensor
    ) -> torch.Tensor:
        batch, heads, head_dim = q.shape
        kv_heads, max_len = k_cache.shape[1], k_cache.shape[2]
        grouped = q.view(batch, kv_heads, heads // kv_heads, head_dim)
        scores = torch.matmul(grouped, k_cache.transpose(-2, -1)) * head_dim**-0.5
        stale = torch.arange(max_len, device=q.device) >= lengths[:, None]
        # float32 softmax for bfloat16 inputs; a float64 run stays in float64.
        scores = scores.to(torch.promote_types(q.dtype, torch.float32))
        scores = scores.masked_fill(stale[:, None, None, :], float("-inf"))
        probs = torch.softmax(scores, dim=-1).to(q.dtype)
        return torch.matmul(probs, v_cache).view(batch, heads, head_dim)


class Expert(Model):
    """Memory-efficient attention through scaled_dot_product_attention with a length mask, the query
    heads of a group taken as that key/value head's query rows (no repeated cache reads)."""

    def forward(
        self, q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, lengths: torch.Tensor
    ) -> torch.Tensor:
        batch, heads, head_dim = q.shape
        kv_heads, max_len = k_cache.shape[1], k_cache.shape[2]
        grouped = q.view(batch, kv_heads, heads // kv_heads, head_dim)
        valid = torch.arange(max_len, device=q.device) < lengths[:, None]
        out = F.scaled_dot_product_attention(grouped, k_cache, v_cache, attn_mask=valid[:, None, None, :])
        return out.view(batch, heads, head_dim)


EXPERT = Expert


def _lengths(batch: int, max_len: int) -> torch.Tensor:
    """Cache lengths spread evenly from 1 to max_len (their sum depends on the config only)."""
    return torch.linspace(1, max_len, batch, dtype=torch.float64).round().long()


def get_inputs(
    batch: int = 3, heads: int = 4, kv_heads: int = 2, max_len: int = 100, head_dim: int = 32
) -> list[torch.Tensor]:
    lengths = _lengths(batch, max_len)[torch.randperm(batch)]
    cache_shape = (batch, kv_heads, max_len, head_dim)
    stale = (torch.arange(max_len) >= lengths[:, None])[:, None, :, None]
    k_cache = torch.where(stale, torch.randn(cache_shape) * 4.0 + 8.0, torch.randn(cache_shape) * 1.5)
    v_cache = torch.where(stale, torch.randn(cache_shape) * 4.0 + 8.0, torch.randn(cache_shape))
    q = torch.randn(batch, heads, head_dim) * 1.5
    return [q.to(torch.bfloat16), k_cache.to(torch.bfloat16), v_cache.to(torch.bfloat16), lengths]


def get_init_inputs(
    batch: int = 3, heads: int = 4, kv_heads: int = 2, max_len: int = 100, head_dim: int = 32
) -> list:
    return []


def flops(batch: int, heads: int, kv_heads: int, max_len: int, head_dim: int) -> int:
    # q·Kᵀ and p·V over the valid cache slots only.
    return 2 * 2 * heads * head_dim * int(_lengths(batch, max_len).sum())


def bytes_moved(batch: int, heads: int, kv_heads: int, max_len: int, head_dim: int) -> int:
    # The valid slots of both caches, the query, the output and the lengths.
    cache = 2 * 2 * kv_heads * head_dim * int(_lengths(batch, max_len).sum())
    return cache + 2 * 2 * batch * heads * head_dim + 8 * batch
