"""Matrix product in float32, Triton: 64×64 output tiles, tl.dot with input_precision="ieee" (no TF32).

Expected verdict: correct

Triton's default for float32 tl.dot on NVIDIA GPUs is TF32 tensor cores, whose 10-bit mantissas fail
this task's tolerance; "ieee" keeps full float32 products and sums. Edges are masked, so odd sizes work.
"""

import torch
import triton
import triton.language as tl
from torch import nn

BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32


@triton.jit
def matmul_ieee(
    a_ptr, b_ptr, c_ptr, m, k, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, k, BLOCK_K):
        a_mask = (rows[:, None] < m) & (k0 + ks[None, :] < k)
        b_mask = (k0 + ks[:, None] < k) & (cols[None, :] < n)
        a = tl.load(a_ptr + rows[:, None].to(tl.int64) * k + k0 + ks[None, :], mask=a_mask, other=0.0)
        b = tl.load(b_ptr + (k0 + ks[:, None]).to(tl.int64) * n + cols[None, :], mask=b_mask, other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    c_mask = (rows[:, None] < m) & (cols[None, :] < n)
    tl.store(c_ptr + rows[:, None].to(tl.int64) * n + cols[None, :], acc, mask=c_mask)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a, b = a.contiguous(), b.contiguous()
        (m, k), n = a.shape, b.shape[1]
        c = torch.empty(m, n, dtype=a.dtype, device=a.device)
        grid = (triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N))
        matmul_ieee[grid](a, b, c, m, k, n, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps=4)
        return c
