"""Fused softmax cross-entropy in float32: the mean loss and its gradient with respect to the logits.

A fused loss kernel computes both in one pass: loss is the mean, over tokens whose target is not −100,
of logsumexp(logits) − logits[target]; the gradient is (softmax(logits) − onehot(target)) / count for
those tokens and 0 for the ignored ones. Rows are shifted by offsets in [-50, 50], so that exp without
the maximum subtracted overflows.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [{"rows": 8, "vocab": 1000}, {"rows": 1021, "vocab": 32000}, {"rows": 1024, "vocab": 128256}]
HIDDEN_CONFIGS = [{"rows": range(266, 418), "vocab": 50257}]
IGNORE_INDEX = -100


class Model(nn.Module):
    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        valid = target != IGNORE_INDEX
        safe_target = torch.where(valid, target, 0)
        log_probs = torch.log_softmax(logits, dim=-1)
        nll = -log_probs.gather(1, safe_target[:, None]).squeeze(1)
        weight = valid.to(logits.dtype) / valid.sum()
        grad = log_probs.exp()
        grad[torch.arange(logits.shape[0], device=logits.device), safe_target] -= 1.0
        return (nll * weight).sum(), grad * weight[:, None]


def get_inputs(rows: int = 8, vocab: int = 1000) -> list[torch.Tensor]:
    offsets = torch.rand(rows, 1) * 100.0 - 50.0
    target = torch.randint(0, vocab, (rows,))
    ignored = torch.rand(rows) < 0.1
    ignored[torch.randint(0, rows, (1,))] = True
    return [torch.randn(rows, vocab) * 3.0 + offsets, target.masked_fill(ignored, IGNORE_INDEX)]


def get_init_inputs(rows: int = 8, vocab: int = 1000) -> list:
    return []


def flops(rows: int, vocab: int) -> int:
    # The log-softmax (five operations per logit) and the scaled gradient (two).
    return 7 * rows * vocab
