"""The scale of the values a computation goes through: what an answer that is zero is judged against.

Where the reference's answer is zero up to its own round-off (the mean of a normalised tensor, say), a
relative error means nothing: its denominator is round-off. The round-off an honest kernel makes is
relative to the values it computes on the way, so the judge records the root mean square of every
intermediate value of the float64 reference and judges the answer's error against the largest.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

# An answer whose task-dtype reference is this far from the float64 one (normwise, relative) is zero up to
# round-off: far beyond what a well-conditioned answer's round-off makes in any floating dtype (bfloat16's
# is about 4e-3), while an answer made of round-off is off by about its own size.
ZERO_ANSWER_OWN_ERROR = 0.1


class _Magnitudes(TorchDispatchMode):
    """Records the RMS of each floating tensor an operator returns (kept on the device: no sync per op)."""

    def __init__(self) -> None:
        super().__init__()
        self.rms: list[torch.Tensor] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        result = func(*args, **(kwargs or {}))
        for value in tree_leaves(result):
            if isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel():
                rms = torch.linalg.vector_norm(value.detach().double()) / value.numel() ** 0.5
                self.rms.append(rms.reshape(()))
        return result


def computation_scale(call: Callable[[], Any], inputs: list[torch.Tensor]) -> float:
    """The largest RMS among the inputs and the values every operator of `call()` produced."""
    recorder = _Magnitudes()
    with torch.no_grad(), recorder:
        call()
    values = [*recorder.rms]
    for tensor in inputs:
        if tensor.is_floating_point() and tensor.numel():
            values.append(torch.linalg.vector_norm(tensor.double()).reshape(()) / tensor.numel() ** 0.5)
    if not values:
        return 0.0
    largest = torch.stack([v.to(values[0].device) for v in values]).nan_to_num(0.0, 0.0, 0.0).max()
    return float(largest)
