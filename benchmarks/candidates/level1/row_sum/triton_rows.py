"""Row sum, Triton: one program per row, a float32 vector accumulator over blocks of columns, one tl.sum at the end.

Expected verdict: correct
"""

import torch
import triton
import triton.language as tl
from torch import nn

# Columns per loop step; rows shorter than this use the next power of two at or above their length.
MAX_BLOCK = 4096


@triton.jit
def row_sum_looped(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    total = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        mask = start + offsets < cols
        total += tl.load(x_ptr + row * cols + start + offsets, mask=mask, other=0.0)
    tl.store(y_ptr + row, tl.sum(total, axis=0))


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        y = torch.empty(rows, dtype=x.dtype, device=x.device)
        block = min(MAX_BLOCK, triton.next_power_of_2(cols))
        row_sum_looped[(rows,)](x, y, cols, BLOCK=block, num_warps=4 if block <= 1024 else 8)
        return y
