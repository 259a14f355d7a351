"""Maximum over the middle dimension of a float32 (batch, n, dim) tensor: the values and their indices.

The reduced dimension is strided in memory. Values lie on a coarse grid, so that the maximum is often
shared: the values must be exact, and the problem's validator accepts the index of any maximum.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [
    {"batch": 2, "n": 100, "dim": 33},
    {"batch": 16, "n": 1023, "dim": 1024},
    {"batch": 64, "n": 4096, "dim": 768},
]
HIDDEN_CONFIGS = [{"batch": range(2, 5), "n": range(4000, 6253), "dim": 257}]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        values, indices = torch.max(x, dim=1)
        return values, indices


def get_inputs(batch: int = 2, n: int = 100, dim: int = 33) -> list[torch.Tensor]:
    # Multiples of 1/2 between about -20 and 20: ties, including at the maximum, are common.
    return [torch.round(torch.randn(batch, n, dim) * 8.0) / 2.0]


def get_init_inputs(batch: int = 2, n: int = 100, dim: int = 33) -> list:
    return []


def validate(
    inputs: list, output: tuple[torch.Tensor, torch.Tensor], reference: tuple[torch.Tensor, torch.Tensor]
) -> str | None:
    (x,) = inputs
    values, indices = output
    wrong = values != reference[0]
    if wrong.any():
        where = wrong.nonzero()[0].tolist()
        return (
            f"{int(wrong.sum())} of {wrong.numel()} maxima are wrong (first at {where}: "
            f"expected {float(reference[0][tuple(where)])}, got {float(values[tuple(where)])})"
        )
    out_of_range = (indices < 0) | (indices >= x.shape[1])
    if out_of_range.any():
        where = out_of_range.nonzero()[0].tolist()
        return f"index {int(indices[tuple(where)])} at {where} is outside [0, {x.shape[1]})"
    pointed = x.gather(1, indices.unsqueeze(1)).squeeze(1)
    wrong = pointed != values
    if wrong.any():
        where = wrong.nonzero()[0].tolist()
        return (
            f"{int(wrong.sum())} of {wrong.numel()} indices do not point to the maximum (first at {where}: "
            f"x = {float(pointed[tuple(where)])}, maximum {float(values[tuple(where)])})"
        )
    return None


def flops(batch: int, n: int, dim: int) -> int:
    return batch * n * dim


def bytes_moved(batch: int, n: int, dim: int) -> int:
    return 4 * batch * n * dim + (4 + 8) * batch * dim
