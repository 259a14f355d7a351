"""Index of the largest value in each row of a float32 matrix (int64), as in greedy decoding.

Values lie on a coarse grid, so that the maximum is often shared by several columns: any of them is a
right answer, and the problem's validator accepts each (PyTorch documents no tie order on the GPU).
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [{"rows": 8, "cols": 1000}, {"rows": 1021, "cols": 32000}, {"rows": 2048, "cols": 128256}]
HIDDEN_CONFIGS = [{"rows": range(50, 80), "cols": range(40205, 62823)}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=-1)


def get_inputs(rows: int = 8, cols: int = 1000) -> list[torch.Tensor]:
    # Multiples of 1/4 between about -40 and 40: ties, including at the maximum, are common.
    return [torch.round(torch.randn(rows, cols) * 32.0) / 4.0]


def get_init_inputs(rows: int = 8, cols: int = 1000) -> list:
    return []


def validate(inputs: list, output: torch.Tensor, reference: torch.Tensor) -> str | None:
    (x,) = inputs
    out_of_range = (output < 0) | (output >= x.shape[-1])
    if out_of_range.any():
        row = int(out_of_range.nonzero()[0, 0])
        return f"row {row}: index {int(output[row])} is outside [0, {x.shape[-1]})"
    got = x.gather(-1, output.unsqueeze(-1)).squeeze(-1)
    best = x.gather(-1, reference.unsqueeze(-1)).squeeze(-1)
    wrong = got != best
    if wrong.any():
        row = int(wrong.nonzero()[0, 0])
        return (
            f"{int(wrong.sum())} of {len(wrong)} rows point to a value below the maximum "
            f"(first: row {row}, x[{int(output[row])}] = {float(got[row])}, maximum {float(best[row])})"
        )
    return None


def bytes_moved(rows: int, cols: int) -> int:
    return 4 * rows * cols + 8 * rows


def flops(rows: int, cols: int) -> int:
    return rows * cols
