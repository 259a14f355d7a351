"""Backward pass of mean cross-entropy with label smoothing and ignored targets, in float32.

Label smoothing 0.1, ignored positions marked -100: the gradient of the logits given the upstream
gradient of the loss.

About a tenth of the positions are ignored (their gradient is zero and they do not count in the mean),
and the logits of some rows are sharply peaked, others flat.
"""

import torch
import torch.nn.functional as F
from torch import nn

DTYPE = "float32"
CONFIGS = [{"tokens": 16, "vocab": 1000}, {"tokens": 1021, "vocab": 32000}, {"tokens": 4096, "vocab": 50257}]
HIDDEN_CONFIGS = [{"tokens": range(204, 320), "vocab": 50257}]
IGNORE_INDEX, LABEL_SMOOTHING = -100, 0.1


class Model(nn.Module):
    def forward(self, logits: torch.Tensor, targets: torch.Tensor, grad_loss: torch.Tensor) -> torch.Tensor:
        with torch.enable_grad():
            logits = logits.detach().clone().requires_grad_()
            loss = F.cross_entropy(
                logits, targets, ignore_index=IGNORE_INDEX, label_smoothing=LABEL_SMOOTHING
            )
            (grad_logits,) = torch.autograd.grad(loss, (logits,), grad_loss)
        return grad_logits


def get_inputs(tokens: int = 16, vocab: int = 1000) -> list[torch.Tensor]:
    sharpness = torch.rand(tokens, 1) * 10.0
    logits = torch.randn(tokens, vocab) * sharpness + torch.randn(tokens, 1) * 20.0
    targets = torch.randint(0, vocab, (tokens,))
    targets[torch.rand(tokens) < 0.1] = IGNORE_INDEX
    targets[0] = IGNORE_INDEX
    return [logits, targets, torch.rand(()) + 0.5]


def get_init_inputs(tokens: int = 16, vocab: int = 1000) -> list:
    return []


def flops(tokens: int, vocab: int) -> int:
    return 6 * tokens * vocab


def bytes_moved(tokens: int, vocab: int) -> int:
    return 2 * 4 * tokens * vocab + 8 * tokens
