"""Time a call where it runs: the timing protocol's entry point (cudasmith.timing.protocol says how a call
is timed). GPU samples are timing/cuda.py's; CPU samples, a monotonic clock around each call, are taken here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from cudasmith.timing import clock
from cudasmith.timing.clock import perf_counter as _perf_counter
from cudasmith.timing.cuda import measure_cuda
from cudasmith.timing.protocol import CallHooks, Measurement, StopRule, TimingError, TimingPlan, warm_up

# A cold sample on the CPU is preceded by writing this many bytes (more than a last-level cache).
CPU_FLUSH_BYTES = 64 * 1024**2


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
        result = _measure_cpu(run, n_sets, plan, hooks)
    swapped = clock.replaced()
    if swapped:
        result.warnings.append(
            f"timing functions replaced by the code under test (not used): {', '.join(swapped)}"
        )
    return result


def _measure_cpu(run: Callable[[int], Any], n_sets: int, plan: TimingPlan, hooks: CallHooks) -> Measurement:
    flush = torch.empty(CPU_FLUSH_BYTES, dtype=torch.uint8) if plan.l2_state == "cold" else None
    # Bound before the first call: between a call's return and its check (hooks.called) nothing is looked up.
    perf, called = _perf_counter, hooks.called
    started = perf()
    warm_up(run, n_sets, plan, lambda: None, hooks)
    warmed = perf()
    samples: list[float] = []
    rule = StopRule(plan)
    while (stop := rule.reason()) is None:
        sample, index = len(samples), len(samples) % n_sets
        hooks.before(sample, index)
        if flush is not None:
            flush.fill_(sample & 0xFF)
        begin = perf()
        output = run(index)
        end = perf()
        called(sample)
        samples.append((end - begin) * 1e3)
        rule.add(samples[-1])
        hooks.after(sample, index, output, True)
        del output
    phases = {"warmup": warmed - started, "sampling": perf() - warmed}
    return Measurement(samples, "perf_counter", plan, stop=stop, phases_s=phases)
