"""Sort a large float32 array in ascending order, against CUB's radix sort.

The expert is torch.sort on the GPU, which is CUB's device radix sort.

Keys span a wide signed range with many ties, signed zeros and infinities. The sorted array is unique,
so the validator demands it exactly (−0.0 and +0.0 count as equal).
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [{"n": 100_003}, {"n": 16_777_259}, {"n": 134_217_757}]
HIDDEN_CONFIGS = [{"n": range(40000013, 62500023)}]


class Model(nn.Module):
    def forward(self, keys: torch.Tensor) -> torch.Tensor:
        return torch.sort(keys).values


class CUB(Model):
    """CUB's device radix sort through torch.sort: the eager reference already is the expert."""


EXPERT = CUB


def get_inputs(n: int = 100_003) -> list[torch.Tensor]:
    kind = torch.randint(0, 16, (n,), dtype=torch.uint8)
    wide = torch.ldexp(torch.randn(n), torch.randint(-30, 30, (n,), dtype=torch.int32))
    keys = torch.where(kind < 12, wide, torch.randint(-100, 100, (n,)).float())
    special = torch.where(
        kind == 14, torch.where(wide < 0, -0.0, 0.0), torch.where(wide < 0, -torch.inf, torch.inf)
    )
    return [torch.where(kind >= 14, special, keys)]


def get_init_inputs(n: int = 100_003) -> list:
    return []


def validate(inputs: list[torch.Tensor], output: torch.Tensor, reference: torch.Tensor) -> str | None:
    wrong = output != reference
    if bool(wrong.any()):
        i = int(torch.nonzero(wrong)[0])
        return (
            f"{int(wrong.sum())} of {reference.numel()} positions differ from the sorted keys "
            f"(first at {i}: expected {float(reference[i])}, got {float(output[i])})"
        )
    return None


def bytes_moved(n: int) -> int:
    return 2 * 4 * n
