"""Log-softmax over the last dimension of a float32 matrix: x − log Σ exp(x) per row.

Each row is shifted by its own offset in [-100, 100]: the answer does not change, but exp(x) without
the maximum subtracted overflows or underflows. Logits are spread widely, so that log(softmax(x))
computed in two steps loses the small probabilities (log of an underflowed zero).
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [{"rows": 16, "cols": 1001}, {"rows": 1023, "cols": 32000}, {"rows": 1024, "cols": 128256}]
HIDDEN_CONFIGS = [{"rows": range(103, 163), "cols": range(40205, 62823)}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=-1)


def get_inputs(rows: int = 16, cols: int = 1001) -> list[torch.Tensor]:
    offsets = torch.rand(rows, 1) * 200.0 - 100.0
    return [torch.randn(rows, cols) * 20.0 + offsets]


def get_init_inputs(rows: int = 16, cols: int = 1001) -> list:
    return []


def flops(rows: int, cols: int) -> int:
    return 5 * rows * cols


def bytes_moved(rows: int, cols: int) -> int:
    return 2 * 4 * rows * cols
