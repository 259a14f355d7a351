"""Residual add then RMSNorm in bfloat16 (vLLM's fused_add_rms_norm): returns (rmsnorm(x + residual), x + residual).

A transformer block's "h = h + attn(h); norm(h)". Statistics in float32 as in Llama; the residual stream is
larger than the update, and rows' scales differ.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "bfloat16"
CONFIGS = [{"tokens": 17, "dim": 1000}, {"tokens": 4093, "dim": 4096}, {"tokens": 16384, "dim": 8192}]
HIDDEN_CONFIGS = [{"tokens": range(800, 1253), "dim": 5120}]


class Model(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter((torch.randn(dim) * 0.2 + 1.0).to(torch.bfloat16))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = x + residual
        # float32 statistics for bfloat16 inputs; a float64 run stays in float64.
        normed = h.to(torch.promote_types(h.dtype, torch.float32))
        normed = normed * torch.rsqrt(normed.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return self.weight * normed.to(h.dtype), h


class Expert(Model):
    """The residual add, then PyTorch's fused RMSNorm kernel."""

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = x + residual
        return F.rms_norm(h, (h.shape[-1],), self.weight, self.eps), h


EXPERT = Expert


def get_inputs(tokens: int = 17, dim: int = 1000) -> list[torch.Tensor]:
    scales = 10.0 ** (torch.rand(tokens, 1) * 2.0 - 1.0)
    x = torch.randn(tokens, dim) * scales
    residual = torch.randn(tokens, dim) * scales * 4.0
    return [x.to(torch.bfloat16), residual.to(torch.bfloat16)]


def get_init_inputs(tokens: int = 17, dim: int = 1000) -> list:
    return [dim]


def flops(tokens: int, dim: int) -> int:
    return 5 * tokens * dim


def bytes_moved(tokens: int, dim: int) -> int:
    return 2 * (4 * tokens * dim + dim)
