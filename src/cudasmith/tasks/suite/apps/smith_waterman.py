"""Smith-Waterman local alignment scores with affine gaps for DNA read/window pairs (int32).

As in the extension step of short-read aligners: the best score of any local alignment of each read with
its reference window, under a substitution matrix and gap penalties where a gap of length L costs 6 + (L
− 1).

Bases are uint8 codes 0..3. Half of the pairs are related (the window holds a copy of the read with
sequencing errors, shifted, with an insertion or deletion), so their best alignments are long and cross
a gap; the others are unrelated. The substitution matrix is random and symmetric (matches +1..+3,
mismatches -4..-2). Scores are exact integers.
"""

import torch
import torch.nn.functional as F
from torch import nn

DTYPE = "int32"
CONFIGS = [
    {"pairs": 8, "query": 37, "target": 45},
    {"pairs": 10_000, "query": 101, "target": 200},
    {"pairs": 100_000, "query": 150, "target": 300},
]
HIDDEN_CONFIGS = [{"pairs": range(2400, 3751), "query": range(60, 95), "target": range(104, 164)}]
ALPHABET, GAP_OPEN, GAP_EXTEND = 4, 6, 1
# Minus infinity for gap scores, far enough from int32's end that subtracting penalties cannot wrap.
NEVER = -(2**20)


class Model(nn.Module):
    def forward(self, query: torch.Tensor, target: torch.Tensor, substitution: torch.Tensor) -> torch.Tensor:
        """Row by row over the query; within a row, gaps along the target come from a running maximum."""
        pairs, n = target.shape
        target = target.long()
        device = target.device
        # Penalties as tensors: integer tensor arithmetic with Python scalars is slow on meta tensors.
        gap_open, gap_extend, zero = (
            torch.tensor(v, dtype=torch.int32, device=device) for v in (GAP_OPEN, GAP_EXTEND, 0)
        )
        column_extension = torch.arange(1, n + 1, dtype=torch.int32, device=device) * gap_extend
        opening = column_extension + gap_open
        # Scores of row i - 1 for target columns 1..n (column 0 is 0); F holds gaps along the query.
        h = torch.zeros((pairs, n), dtype=torch.int32, device=device)
        f = torch.full_like(h, NEVER)
        top = h
        for i in range(query.shape[1]):
            match = torch.gather(substitution[query[:, i].long()], 1, target)
            f = torch.maximum(h - gap_open, f - gap_extend)
            h = torch.maximum(torch.maximum(F.pad(h[:, :-1], (1, 0)) + match, f), zero)
            # E[j] = max over k < j of H[k] - open - (j - 1 - k)·extend.
            opened = torch.cummax(h + column_extension, dim=1).values - opening
            h = torch.maximum(h, F.pad(opened[:, :-1], (1, 0), value=NEVER))
            top = torch.maximum(top, h)
        return top.amax(dim=1)


def get_inputs(pairs: int = 8, query: int = 37, target: int = 45) -> list[torch.Tensor]:
    reads = torch.randint(0, ALPHABET, (pairs, query))
    shift = torch.randint(-query // 4, max(1, target - query + query // 4), (pairs, 1))
    indel_at = torch.randint(query // 4, max(query // 4 + 1, 3 * query // 4), (pairs, 1))
    indel = torch.randint(-3, 4, (pairs, 1))
    positions = torch.arange(target)[None, :] - shift
    positions = torch.where(positions >= indel_at, positions - indel, positions)
    copied = torch.gather(reads, 1, positions.clamp(0, query - 1))
    errors = torch.rand(pairs, target) < 0.1
    copied = torch.where(errors, torch.randint(0, ALPHABET, (pairs, target)), copied)
    related = (torch.arange(pairs)[:, None] % 2 == 0) & (positions >= 0) & (positions < query)
    windows = torch.where(related, copied, torch.randint(0, ALPHABET, (pairs, target)))
    scores = torch.randint(-4, -1, (ALPHABET, ALPHABET))
    substitution = torch.triu(scores) + torch.triu(scores, 1).t()
    substitution.diagonal().copy_(torch.randint(1, 4, (ALPHABET,)))
    return [reads.to(torch.uint8), windows.to(torch.uint8), substitution.int()]


def get_init_inputs(pairs: int = 8, query: int = 37, target: int = 45) -> list:
    return []


def flops(pairs: int, query: int, target: int) -> int:
    # Integer operations, not floating-point ones: about ten per cell (two gap scores, each a subtraction
    # pair and a maximum, the match score and the three-way maximum), as the roofline's work measure.
    return 10 * pairs * query * target
