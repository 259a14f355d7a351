"""Ascending sort of each row of a float32 matrix: the sorted values and the sorting permutation (int64).

Values lie on a coarse grid, so that equal keys are common: the values must be exact, and the problem's
validator accepts any permutation that sorts the row (stability is not required).
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [{"rows": 8, "cols": 1000}, {"rows": 1021, "cols": 4097}, {"rows": 8192, "cols": 8192}]
HIDDEN_CONFIGS = [{"rows": range(7, 13), "cols": range(240005, 375010)}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        values, indices = torch.sort(x, dim=-1)
        return values, indices


def get_inputs(rows: int = 8, cols: int = 1000) -> list[torch.Tensor]:
    # Multiples of 1/8 between about -40 and 40: many keys repeat, and signs and zeros are mixed.
    return [torch.round(torch.randn(rows, cols) * 80.0) / 8.0]


def get_init_inputs(rows: int = 8, cols: int = 1000) -> list:
    return []


def validate(
    inputs: list, output: tuple[torch.Tensor, torch.Tensor], reference: tuple[torch.Tensor, torch.Tensor]
) -> str | None:
    (x,) = inputs
    values, indices = output
    wrong = values != reference[0]
    if wrong.any():
        row, column = wrong.nonzero()[0].tolist()
        return (
            f"{int(wrong.sum())} of {wrong.numel()} sorted values are wrong (first at [{row}, {column}]: "
            f"expected {float(reference[0][row, column])}, got {float(values[row, column])})"
        )
    if ((indices < 0) | (indices >= x.shape[-1])).any():
        return f"an index is outside [0, {x.shape[-1]})"
    # A permutation names every column exactly once.
    counts = torch.zeros_like(indices).scatter_add_(-1, indices, torch.ones_like(indices))
    if (counts != 1).any():
        row = int((counts != 1).any(dim=-1).nonzero()[0, 0])
        return f"the indices of row {row} are not a permutation (some column is named twice)"
    wrong = x.gather(-1, indices) != values
    if wrong.any():
        row, column = wrong.nonzero()[0].tolist()
        return f"{int(wrong.sum())} indices do not point to their sorted value (first at [{row}, {column}])"
    return None


def flops(rows: int, cols: int) -> int:
    # Comparisons of an n·log₂(n) sort.
    return rows * cols * max(1, (cols - 1).bit_length())


def bytes_moved(rows: int, cols: int) -> int:
    return (4 + 4 + 8) * rows * cols
