"""Heat diffusion on a 2-D grid: several explicit 5-point stencil steps, in float32.

Each step updates the interior as u ← u + 0.2·(north + south + east + west − 4u); the boundary ring
stays fixed.

The initial field is noise on top of hot and cold rectangles of either sign, so it has sharp edges to
diffuse; several steps per call leave room for temporal blocking.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"height": 33, "width": 47, "steps": 4},
    {"height": 1001, "width": 1999, "steps": 10},
    {"height": 8192, "width": 8191, "steps": 10},
]
HIDDEN_CONFIGS = [{"height": range(1639, 2563), "width": range(621, 973), "steps": 7}]
ALPHA = 0.2


class Model(nn.Module):
    def __init__(self, steps: int) -> None:
        super().__init__()
        self.steps = steps

    def forward(self, field: torch.Tensor) -> torch.Tensor:
        for _ in range(self.steps):
            inner = field[1:-1, 1:-1]
            neighbours = field[:-2, 1:-1] + field[2:, 1:-1] + field[1:-1, :-2] + field[1:-1, 2:]
            field = field.clone()
            field[1:-1, 1:-1] = inner + ALPHA * (neighbours - 4.0 * inner)
        return field


def get_inputs(height: int = 33, width: int = 47, steps: int = 4) -> list[torch.Tensor]:
    rows, cols = torch.arange(height)[:, None], torch.arange(width)[None, :]
    field = torch.randn(height, width)
    for _ in range(8):
        top, left = torch.randint(0, height, (1,)), torch.randint(0, width, (1,))
        size = torch.randint(1, max(2, min(height, width) // 3), (2,))
        inside = (rows >= top) & (rows < top + size[0]) & (cols >= left) & (cols < left + size[1])
        field = field + torch.where(inside, torch.randn(()) * 100.0, 0.0)
    return [field]


def get_init_inputs(height: int = 33, width: int = 47, steps: int = 4) -> list:
    return [steps]


def flops(height: int, width: int, steps: int) -> int:
    return 6 * (height - 2) * (width - 2) * steps


def bytes_moved(height: int, width: int, steps: int) -> int:
    return 2 * 4 * height * width
