"""How a call is timed: one small interface, the same for candidates and baselines, GPU and CPU.

A measurement keeps its raw samples; its statistics are computed from them on demand.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from time import perf_counter

import torch

# Bound when this module is imported, before any candidate code runs: a solution that replaces
# torch.cuda.Event.elapsed_time, torch.cuda.synchronize or time.perf_counter changes nothing here.
_Event = torch.cuda.Event
_elapsed_time = torch.cuda.Event.elapsed_time
_record = torch.cuda.Event.record
_synchronize = torch.cuda.synchronize

# Warm-up: at least this many calls and this much time before the first sample (compilation, autotuning,
# cold instruction caches and clock ramp-up stay out of the numbers).
WARMUP_CALLS = 3
WARMUP_MS = 50.0
# Sampling stops once the mean's relative standard error is under this target and there are at least
# MIN_SAMPLES, or after MAX_SECONDS of sampling with at least MIN_SAMPLES_UNDER_CAP, or at MAX_SAMPLES.
MIN_SAMPLES = 10
MIN_SAMPLES_UNDER_CAP = 3
MAX_SAMPLES = 1000
MAX_SECONDS = 2.0
# CPU timings are noisier and CPU configs smaller: a shorter cap keeps CPU evaluations quick.
MAX_SECONDS_CPU = 0.5
TARGET_REL_STDERR = 0.005
# A cold-L2 sample is preceded by writing a buffer this many times the L2 size.
L2_FLUSH_FACTOR = 2
# L2 size assumed when the device does not report one; and the CPU's last-level cache flush size.
FALLBACK_L2_BYTES = 64 * 1024**2
CPU_FLUSH_BYTES = 64 * 1024**2
# z for a two-sided 95 % interval.
Z95 = 1.96


@dataclass(frozen=True)
class TimingPlan:
    """What to measure and when to stop; recorded with every measurement."""

    l2_state: str = "cold"
    warmup_calls: int = WARMUP_CALLS
    warmup_ms: float = WARMUP_MS
    min_samples: int = MIN_SAMPLES
    max_samples: int = MAX_SAMPLES
    max_seconds: float = MAX_SECONDS
    target_rel_stderr: float = TARGET_REL_STDERR


@dataclass
class Measurement:
    """Raw samples of one timed callable, in milliseconds, and how they were taken."""

    samples_ms: list[float]
    method: str
    plan: TimingPlan = field(default_factory=TimingPlan)

    @property
    def median_ms(self) -> float:
        """The median sample."""
        return statistics.median(self.samples_ms)

    @property
    def ci95_ms(self) -> tuple[float, float]:
        """A distribution-free 95 % confidence interval of the median (order statistics)."""
        ordered = sorted(self.samples_ms)
        n = len(ordered)
        half_width = Z95 * math.sqrt(n) / 2
        low = max(0, math.floor(n / 2 - half_width) - 1)
        high = min(n - 1, math.ceil(n / 2 + half_width))
        return ordered[low], ordered[high]

    @property
    def rel_stderr(self) -> float:
        """Standard error of the mean over the mean: the noise the stop rule looks at."""
        return _rel_stderr(self.samples_ms)

    def summary(self) -> dict[str, object]:
        """A JSON-ready summary with the raw samples."""
        low, high = self.ci95_ms
        return {
            "median_ms": self.median_ms,
            "ci95_ms": [low, high],
            "rel_stderr": self.rel_stderr,
            "n": len(self.samples_ms),
            "method": self.method,
            "plan": asdict(self.plan),
            "samples_ms": self.samples_ms,
        }


def _rel_stderr(samples: list[float]) -> float:
    if len(samples) < 2:
        return math.inf
    mean = statistics.fmean(samples)
    return statistics.stdev(samples) / math.sqrt(len(samples)) / mean if mean > 0 else math.inf


def _done(samples: list[float], elapsed_s: float, plan: TimingPlan) -> bool:
    n = len(samples)
    if n >= plan.max_samples:
        return True
    if elapsed_s >= plan.max_seconds and n >= MIN_SAMPLES_UNDER_CAP:
        return True
    return n >= plan.min_samples and _rel_stderr(samples) <= plan.target_rel_stderr


def _l2_bytes(device: torch.device) -> int:
    props = torch.cuda.get_device_properties(device)
    return int(getattr(props, "L2_cache_size", 0) or FALLBACK_L2_BYTES)


Hook = Callable[[int], None]


def _no_hook(call: int) -> None:
    return None


def _warm_up(run: Hook, plan: TimingPlan, sync: Callable[[], None], before: Hook, after: Hook) -> int:
    """Call until both warm-up minimums are met; returns the number of calls made."""
    started = perf_counter()
    calls = 0
    while calls < plan.warmup_calls or (perf_counter() - started) * 1e3 < plan.warmup_ms:
        before(calls)
        run(calls)
        sync()
        after(calls)
        calls += 1
    return calls


def default_plan(device: str, l2_state: str = "cold") -> TimingPlan:
    """The protocol's plan for a device."""
    if device.startswith("cuda"):
        return TimingPlan(l2_state=l2_state)
    return TimingPlan(l2_state=l2_state, max_seconds=MAX_SECONDS_CPU)


def measure(
    run: Hook, device: str, plan: TimingPlan, before: Hook = _no_hook, after: Hook = _no_hook
) -> Measurement:
    """Time `run(call)`, which calls the code under test; `call` counts every call, warm-up included.

    `before(call)` and `after(call)` run outside the timed region (preparing a call's inputs, keeping
    its output); the caller rotates input sets by the call number.
    """
    if device.startswith("cuda"):
        return _measure_cuda(run, plan, before, after)
    return _measure_cpu(run, plan, before, after)


def _measure_cuda(run: Hook, plan: TimingPlan, before: Hook, after: Hook) -> Measurement:
    device = torch.device("cuda", torch.cuda.current_device())
    flush = None
    if plan.l2_state == "cold":
        flush = torch.empty(L2_FLUSH_FACTOR * _l2_bytes(device), dtype=torch.uint8, device=device)
    call = _warm_up(run, plan, _synchronize, before, after)
    samples: list[float] = []
    started = perf_counter()
    while not _done(samples, perf_counter() - started, plan):
        before(call)
        if flush is not None:
            flush.zero_()
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        _record(start)
        run(call)
        _record(end)
        # Device-wide: work the call left on other streams finishes before the next sample starts.
        _synchronize()
        samples.append(_elapsed_time(start, end))
        after(call)
        call += 1
    return Measurement(samples, "cuda-events", plan)


def _measure_cpu(run: Hook, plan: TimingPlan, before: Hook, after: Hook) -> Measurement:
    flush = torch.empty(CPU_FLUSH_BYTES, dtype=torch.uint8) if plan.l2_state == "cold" else None
    call = _warm_up(run, plan, lambda: None, before, after)
    samples: list[float] = []
    started = perf_counter()
    while not _done(samples, perf_counter() - started, plan):
        before(call)
        if flush is not None:
            flush.fill_(call & 0xFF)
        begin = perf_counter()
        run(call)
        samples.append((perf_counter() - begin) * 1e3)
        after(call)
        call += 1
    return Measurement(samples, "perf_counter", plan)
