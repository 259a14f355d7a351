"""Poisoning freed GPU memory before candidate calls, so that stale values cannot pass as results.

PyTorch's caching allocator hands freed blocks to the next allocation of a fitting size; an output
allocated with `torch.empty` and left partly unwritten would show whatever the block held. Before
each checked call the worker fills every free block with 0xFF bytes: NaN in float32, float16,
bfloat16 and float64, -1 in integers. Unwritten outputs then fail the comparison loudly.
"""

from __future__ import annotations

import torch

from cudasmith.timing import clock

POISON_BYTE = 0xFF


def poison_free_gpu_memory(extra_bytes: int = 0) -> int:
    """Fill the allocator's free blocks, and `extra_bytes` of fresh memory, with the poison byte.

    Returns the bytes poisoned. The fresh block covers outputs larger than any cached free block.
    """
    clock.cuda_synchronize()
    sizes = [
        block["size"]
        for segment in torch.cuda.memory_snapshot()
        for block in segment["blocks"]
        if block["state"] == "inactive"
    ]
    if extra_bytes:
        sizes.append(extra_bytes)
    held = [
        torch.empty(size, dtype=torch.uint8, device="cuda").fill_(POISON_BYTE)
        for size in sorted(sizes, reverse=True)
    ]
    clock.cuda_synchronize()
    del held
    return sum(sizes)
