"""Vector sum, Triton: one program per block of 2048 elements, masked at the end.

Expected verdict: correct
"""

import torch
import triton
import triton.language as tl
from torch import nn

# Elements per program: large enough that each thread of 8 warps moves several 16-byte vectors.
BLOCK = 2048


@triton.jit
def add_blocks(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets, mask=mask)
    tl.store(c_ptr + offsets, a + b, mask=mask)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a, b = a.contiguous(), b.contiguous()
        c = torch.empty_like(a)
        n = a.numel()
        add_blocks[(triton.cdiv(n, BLOCK),)](a, b, c, n, BLOCK=BLOCK, num_warps=8)
        return c
