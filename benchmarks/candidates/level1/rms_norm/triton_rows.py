"""RMS norm (bfloat16, Llama's), Triton: one program per row, float32 statistics, two passes over the row.

Expected verdict: correct

As the reference does: the mean of squares in float32, x * rsqrt(mean + eps) rounded to bfloat16, then
multiplied by the bfloat16 weight and rounded again. The weight is drawn in __init__ exactly as Model
draws it, so the judge's seeded construction gives both the same values.
"""

import torch
import triton
import triton.language as tl
from torch import nn

# Columns per loop step: rows are 1000 to 8192 long.
BLOCK = 2048


@triton.jit
def rms_norm_rows(x_ptr, w_ptr, y_ptr, dim, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    squares = tl.zeros([BLOCK], tl.float32)
    for start in range(0, dim, BLOCK):
        mask = start + offsets < dim
        v = tl.load(x_ptr + row * dim + start + offsets, mask=mask, other=0.0).to(tl.float32)
        squares += v * v
    scale = 1.0 / tl.sqrt(tl.sum(squares, axis=0) / dim + eps)
    for start in range(0, dim, BLOCK):
        mask = start + offsets < dim
        v = tl.load(x_ptr + row * dim + start + offsets, mask=mask, other=0.0).to(tl.float32)
        normalised = (v * scale).to(tl.bfloat16).to(tl.float32)
        w = tl.load(w_ptr + start + offsets, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * dim + start + offsets, (w * normalised).to(tl.bfloat16), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter((torch.randn(dim) * 0.2 + 1.0).to(torch.bfloat16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, dim = x.shape
        rms_norm_rows[(rows,)](x, self.weight, y, dim, self.eps, BLOCK=BLOCK, num_warps=8)
        return y
