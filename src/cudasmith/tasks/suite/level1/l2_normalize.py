"""L2 normalisation of each row of a float32 matrix, x / max(‖x‖₂, 1e-12), as for embeddings.

Rows are scaled by factors from 10⁻³ to 10³, so that a fixed absolute epsilon or a norm computed
carelessly shows on the small and the large rows alike.
"""

import torch
from torch import nn
from torch.nn import functional as F

DTYPE = "float32"
CONFIGS = [{"rows": 10, "dim": 129}, {"rows": 65_537, "dim": 768}, {"rows": 131_072, "dim": 1024}]
HIDDEN_CONFIGS = [{"rows": range(800, 1251), "dim": 4099}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(x, p=2.0, dim=-1)


def get_inputs(rows: int = 10, dim: int = 129) -> list[torch.Tensor]:
    scales = 10.0 ** (torch.rand(rows, 1) * 6.0 - 3.0)
    return [torch.randn(rows, dim) * scales]


def get_init_inputs(rows: int = 10, dim: int = 129) -> list:
    return []


def flops(rows: int, dim: int) -> int:
    return 3 * rows * dim


def bytes_moved(rows: int, dim: int) -> int:
    return 2 * 4 * rows * dim
