"""Row-wise softmax in Triton, for task level1/softmax.

    cudasmith eval examples/softmax_triton.py --task level1/softmax

One program per row. Rows that fit in one block (up to 16384 columns) are read once, reduced in
registers and written once. Longer rows go in blocks: a first loop keeps the running maximum and the
sum rescaled to it (online softmax), a second writes exp(x - max) / sum.
"""

import torch
import triton
import triton.language as tl
from torch import nn

# Rows up to this many columns are held whole in one program's registers.
WHOLE_ROW_LIMIT = 16384
# Column block of the looped kernel for longer rows.
LOOP_BLOCK = 4096


@triton.jit
def softmax_whole_rows(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < cols
    v = tl.load(x_ptr + row * cols + offsets, mask=mask, other=float("-inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(y_ptr + row * cols + offsets, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def softmax_long_rows(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * cols
    y_row = y_ptr + row * cols
    offsets = tl.arange(0, BLOCK)
    peak = tl.full([BLOCK], float("-inf"), tl.float32)
    total = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        v = tl.load(x_row + start + offsets, mask=start + offsets < cols, other=float("-inf"))
        new_peak = tl.maximum(peak, v)
        rescale = tl.where(new_peak == float("-inf"), 0.0, tl.exp(peak - new_peak))
        total = total * rescale + tl.where(v == float("-inf"), 0.0, tl.exp(v - new_peak))
        peak = new_peak
    row_peak = tl.max(peak, axis=0)
    row_total = tl.sum(total * tl.where(peak == float("-inf"), 0.0, tl.exp(peak - row_peak)), axis=0)
    inv = 1.0 / row_total
    for start in range(0, cols, BLOCK):
        mask = start + offsets < cols
        v = tl.load(x_row + start + offsets, mask=mask, other=float("-inf"))
        tl.store(y_row + start + offsets, tl.exp(v - row_peak) * inv, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        if cols <= WHOLE_ROW_LIMIT:
            block = triton.next_power_of_2(cols)
            softmax_whole_rows[(rows,)](x, y, cols, BLOCK=block, num_warps=min(16, max(4, block // 512)))
        else:
            softmax_long_rows[(rows,)](x, y, cols, BLOCK=LOOP_BLOCK, num_warps=8)
        return y
