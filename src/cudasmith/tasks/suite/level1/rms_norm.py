"""RMS normalisation over the last dimension with a learned scale, in bfloat16 (Llama's RMSNorm).

As in Llama, the statistics are computed in float32 and the normalised value is rounded to bfloat16
before the scale multiplies it. Rows are scaled by factors from 0.1 to 10, and the scale is random.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "bfloat16"
CONFIGS = [{"rows": 17, "dim": 1000}, {"rows": 4093, "dim": 4096}, {"rows": 16384, "dim": 8192}]
HIDDEN_CONFIGS = [{"rows": range(800, 1253), "dim": 5120}]


class Model(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter((torch.randn(dim) * 0.2 + 1.0).to(torch.bfloat16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # float32 statistics for bfloat16 inputs; a float64 run stays in float64.
        h = x.to(torch.promote_types(x.dtype, torch.float32))
        h = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class Expert(Model):
    """PyTorch's fused RMSNorm kernel."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)


EXPERT = Expert


def get_inputs(rows: int = 17, dim: int = 1000) -> list[torch.Tensor]:
    scales = 10.0 ** (torch.rand(rows, 1) * 2.0 - 1.0)
    return [(torch.randn(rows, dim) * scales).to(torch.bfloat16)]


def get_init_inputs(rows: int = 17, dim: int = 1000) -> list:
    return [dim]


def flops(rows: int, dim: int) -> int:
    return 4 * rows * dim


def bytes_moved(rows: int, dim: int) -> int:
    return 2 * (2 * rows * dim + dim)
