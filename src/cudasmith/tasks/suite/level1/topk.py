"""The k largest values of each row of a float32 matrix, in descending order, with their indices.

As in top-k sampling over a vocabulary. Values lie on a coarse grid, so that ties (also across the k-th
place) are common: the values must be exact, and the problem's validator accepts any k distinct indices
that point to them.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"rows": 8, "cols": 1000, "k": 10},
    {"rows": 1021, "cols": 32000, "k": 50},
    {"rows": 2048, "cols": 128256, "k": 64},
]
HIDDEN_CONFIGS = [{"rows": range(80, 126), "cols": range(40205, 62823), "k": range(32, 51)}]


class Model(nn.Module):
    def __init__(self, k: int) -> None:
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        values, indices = torch.topk(x, self.k, dim=-1, largest=True, sorted=True)
        return values, indices


def get_inputs(rows: int = 8, cols: int = 1000, k: int = 10) -> list[torch.Tensor]:
    # Multiples of 1/4 between about -40 and 40: many values are shared, among the largest too.
    return [torch.round(torch.randn(rows, cols) * 32.0) / 4.0]


def get_init_inputs(rows: int = 8, cols: int = 1000, k: int = 10) -> list:
    return [k]


def validate(
    inputs: list, output: tuple[torch.Tensor, torch.Tensor], reference: tuple[torch.Tensor, torch.Tensor]
) -> str | None:
    (x,) = inputs
    values, indices = output
    wrong = values != reference[0]
    if wrong.any():
        row, place = wrong.nonzero()[0].tolist()
        return (
            f"{int(wrong.sum())} of {wrong.numel()} values are wrong (first: row {row}, place {place}: "
            f"expected {float(reference[0][row, place])}, got {float(values[row, place])})"
        )
    if ((indices < 0) | (indices >= x.shape[-1])).any():
        return f"an index is outside [0, {x.shape[-1]})"
    wrong = x.gather(-1, indices) != values
    if wrong.any():
        row, place = wrong.nonzero()[0].tolist()
        return f"{int(wrong.sum())} indices do not point to their value (first: row {row}, place {place})"
    ordered = indices.sort(dim=-1).values
    repeated = (ordered[:, 1:] == ordered[:, :-1]).any(dim=-1)
    if repeated.any():
        return f"{int(repeated.sum())} rows name the same index twice (first: row {int(repeated.nonzero()[0, 0])})"
    return None


def flops(rows: int, cols: int, k: int) -> int:
    return rows * cols


def bytes_moved(rows: int, cols: int, k: int) -> int:
    return 4 * rows * cols + (4 + 8) * rows * k
