"""Time a call where it runs: the timing protocol's entry point (cudasmith.timing.protocol says how a call
is timed). GPU samples are timing/cuda.py's; CPU samples, a monotonic clock around each call on a thread of
its own, timing/calling.py's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cudasmith.timing import clock
from cudasmith.timing.calling import measure_cpu
from cudasmith.timing.cuda import measure_cuda
from cudasmith.timing.protocol import CallHooks, Measurement, TimingError, TimingPlan


def measure(
    run: Callable[[int], Any],
    n_sets: int,
    device: str,
    plan: TimingPlan,
    hooks: CallHooks | None = None,
) -> Measurement:
    """Time `run(i)`, which calls the code under test on input set `i`; sets rotate between samples."""
    if n_sets < 1:
        raise ValueError("measure() needs at least one input set")
    hooks = hooks or CallHooks()
    if device.startswith("cuda"):
        result = measure_cuda(run, n_sets, plan, hooks)
    elif plan.launch != "queued":
        raise TimingError(f"launch mode {plan.launch!r} needs a GPU; the CPU times calls one by one")
    else:
        result = measure_cpu(run, n_sets, plan, hooks)
    swapped = clock.replaced()
    if swapped:
        result.warnings.append(
            f"timing functions replaced by the code under test (not used): {', '.join(swapped)}"
        )
    return result
