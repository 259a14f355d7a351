"""Matrix-vector product y = W @ x in bfloat16 (N×K times K), as in a decode step's projections.

Memory-bound: every weight is read once. The top sizes are Llama-3-8B's MLP and vocabulary projections.
"""

import torch
from torch import nn

DTYPE = "bfloat16"
CONFIGS = [{"n": 1000, "k": 999}, {"n": 14336, "k": 4096}, {"n": 128256, "k": 4096}]
HIDDEN_CONFIGS = [{"n": range(820, 1283), "k": range(3279, 5125)}]


class Model(nn.Module):
    def forward(self, w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(w, x)


def get_inputs(n: int = 1000, k: int = 999) -> list[torch.Tensor]:
    return [torch.randn(n, k).to(torch.bfloat16), torch.randn(k).to(torch.bfloat16)]


def get_init_inputs(n: int = 1000, k: int = 999) -> list:
    return []


def flops(n: int, k: int) -> int:
    return 2 * n * k


def bytes_moved(n: int, k: int) -> int:
    return 2 * (n * k + k + n)
