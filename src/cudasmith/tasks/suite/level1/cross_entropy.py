"""Per-token cross-entropy loss of float32 logits against int64 targets, with ignored (padding) tokens.

loss[i] = logsumexp(logits[i]) − logits[i, target[i]], and 0 where target[i] is −100 (about one token
in ten). Rows are shifted by offsets in [-50, 50], so that exp without the maximum subtracted overflows.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "float32"
CONFIGS = [{"rows": 8, "vocab": 1000}, {"rows": 1021, "vocab": 32000}, {"rows": 2048, "vocab": 128256}]
HIDDEN_CONFIGS = [{"rows": range(266, 418), "vocab": 50257}]
IGNORE_INDEX = -100


class Model(nn.Module):
    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, target, ignore_index=IGNORE_INDEX, reduction="none")


def get_inputs(rows: int = 8, vocab: int = 1000) -> list[torch.Tensor]:
    offsets = torch.rand(rows, 1) * 100.0 - 50.0
    target = torch.randint(0, vocab, (rows,))
    ignored = torch.rand(rows) < 0.1
    ignored[torch.randint(0, rows, (1,))] = True
    return [torch.randn(rows, vocab) * 3.0 + offsets, target.masked_fill(ignored, IGNORE_INDEX)]


def get_init_inputs(rows: int = 8, vocab: int = 1000) -> list:
    return []


def flops(rows: int, vocab: int) -> int:
    return 4 * rows * vocab
