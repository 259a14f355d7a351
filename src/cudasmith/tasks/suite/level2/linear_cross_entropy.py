"""Language-model head then per-token cross-entropy: bfloat16 hidden states to float32 losses.

The hidden states times the vocabulary projection, then each token's loss against its target (0 for
ignored tokens), as in training a causal LM. The T×V logits need never reach memory: a fused kernel
can keep them on chip. The reference rounds them to bfloat16 as a model's lm_head does, then upcasts
for the loss; keeping them in float32 is more accurate and passes.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "bfloat16"
CONFIGS = [
    {"tokens": 16, "hidden": 64, "vocab": 1000},
    {"tokens": 2048, "hidden": 4096, "vocab": 32000},
    {"tokens": 4096, "hidden": 4096, "vocab": 128256},
]
HIDDEN_CONFIGS = [{"tokens": range(29, 48), "hidden": 512, "vocab": 32003}]
IGNORE_INDEX = -100


class Model(nn.Module):
    def __init__(self, hidden: int, vocab: int) -> None:
        super().__init__()
        self.weight = nn.Parameter((torch.randn(vocab, hidden) * 2.0 * hidden**-0.5).to(torch.bfloat16))

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        logits = torch.matmul(x, self.weight.t())
        logits = logits.to(torch.promote_types(logits.dtype, torch.float32))
        return F.cross_entropy(logits, target, ignore_index=IGNORE_INDEX, reduction="none")


def get_inputs(tokens: int = 16, hidden: int = 64, vocab: int = 1000) -> list[torch.Tensor]:
    target = torch.randint(0, vocab, (tokens,))
    ignored = torch.rand(tokens) < 0.1
    ignored[torch.randint(0, tokens, (1,))] = True
    return [torch.randn(tokens, hidden).to(torch.bfloat16), target.masked_fill(ignored, IGNORE_INDEX)]


def get_init_inputs(tokens: int = 16, hidden: int = 64, vocab: int = 1000) -> list:
    return [hidden, vocab]


def flops(tokens: int, hidden: int, vocab: int) -> int:
    # The GEMM, then the logsumexp (four operations per logit).
    return 2 * tokens * hidden * vocab + 4 * tokens * vocab


def bytes_moved(tokens: int, hidden: int, vocab: int) -> int:
    return 2 * (tokens * hidden + vocab * hidden) + 8 * tokens + 4 * tokens
