"""Sort key-value pairs by float32 key, carrying int32 values along.

Keys ascend; each value (a record id) stays with its key. Equal keys may come in any order (stability is
not required).

Keys mix a wide signed range, heavy ties, signed zeros, subnormals and infinities, the cases where a
radix sort on float bits goes wrong. The validator checks the answer itself: keys ascending, values a
permutation of the input values, and each value still next to its own key.
"""

import torch
from torch import nn

DTYPE = "float32"
CONFIGS = [{"pairs": 1000}, {"pairs": 1_000_003}, {"pairs": 33_554_467}]
HIDDEN_CONFIGS = [{"pairs": range(2400013, 3750023)}]


class Model(nn.Module):
    def forward(self, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        sorted_keys, order = torch.sort(keys)
        return sorted_keys, values[order]


def get_inputs(pairs: int = 1000) -> list[torch.Tensor]:
    kind = torch.randint(0, 10, (pairs,), dtype=torch.uint8)
    uniform = torch.rand(pairs)
    sign = torch.where(uniform < 0.5, -1.0, 1.0)
    wide = torch.ldexp(torch.randn(pairs), torch.randint(-20, 20, (pairs,), dtype=torch.int32))
    keys = torch.where(kind < 5, wide, torch.randint(-50, 50, (pairs,)).float())
    # Kinds 7, 8 and 9: signed zeros, subnormals and infinities.
    special = torch.where(kind == 7, 0.0, torch.where(kind == 8, uniform * 1e-39, torch.inf)) * sign
    return [torch.where(kind >= 7, special, keys), torch.randperm(pairs, dtype=torch.int32)]


def get_init_inputs(pairs: int = 1000) -> list:
    return []


def validate(
    inputs: list[torch.Tensor],
    output: tuple[torch.Tensor, torch.Tensor],
    reference: tuple[torch.Tensor, torch.Tensor],
) -> str | None:
    keys, values = inputs
    sorted_keys, sorted_values = output
    if bool(torch.isnan(sorted_keys).any()):
        return (
            f"position {int(torch.nonzero(torch.isnan(sorted_keys))[0])} holds a NaN key; the input has none"
        )
    descending = sorted_keys[1:] < sorted_keys[:-1]
    if bool(descending.any()):
        i = int(torch.nonzero(descending)[0])
        return f"keys are not ascending: position {i} holds {float(sorted_keys[i])}, position {i + 1} holds {float(sorted_keys[i + 1])}"
    # Values are a permutation of 0..n-1, so a value names the input position it came from.
    origin = sorted_values.long()
    outside = (origin < 0) | (origin >= len(values))
    if bool(outside.any()):
        i = int(torch.nonzero(outside)[0])
        return f"position {i} holds value {int(sorted_values[i])}, which is not an input value"
    position_of = torch.empty_like(origin)
    position_of[values.long()] = torch.arange(len(values))
    origin = position_of[origin]
    seen = torch.zeros(len(values), dtype=torch.int32).index_add_(0, origin, torch.ones_like(sorted_values))
    if bool((seen != 1).any()):
        i = int(torch.nonzero(seen != 1)[0])
        return f"the value {int(values[i])} appears {int(seen[i])} times in the output, expected once"
    mismatched = keys[origin] != sorted_keys
    if bool(mismatched.any()):
        i = int(torch.nonzero(mismatched)[0])
        return (
            f"position {i} pairs key {float(sorted_keys[i])} with value {int(sorted_values[i])}, "
            f"whose key is {float(keys[origin[i]])}"
        )
    return None
