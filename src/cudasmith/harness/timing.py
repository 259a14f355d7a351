"""How a call is timed: one small interface, the same for candidates and baselines, GPU and CPU.

A measurement keeps its raw samples; its statistics are computed from them on demand.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch

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


def _warm_up(run: Callable[[int], None], n_sets: int, plan: TimingPlan, sync: Callable[[], None]) -> None:
    started = time.perf_counter()
    calls = 0
    while calls < plan.warmup_calls or (time.perf_counter() - started) * 1e3 < plan.warmup_ms:
        run(calls % n_sets)
        sync()
        calls += 1


def default_plan(device: str, l2_state: str = "cold") -> TimingPlan:
    """The protocol's plan for a device."""
    if device.startswith("cuda"):
        return TimingPlan(l2_state=l2_state)
    return TimingPlan(l2_state=l2_state, max_seconds=MAX_SECONDS_CPU)


def measure(run: Callable[[int], None], n_sets: int, device: str, plan: TimingPlan) -> Measurement:
    """Time `run(i)`, which calls the code under test on input set `i`; sets rotate between samples."""
    if device.startswith("cuda"):
        return _measure_cuda(run, n_sets, plan)
    return _measure_cpu(run, n_sets, plan)


def _measure_cuda(run: Callable[[int], None], n_sets: int, plan: TimingPlan) -> Measurement:
    device = torch.device("cuda", torch.cuda.current_device())
    flush = None
    if plan.l2_state == "cold":
        flush = torch.empty(L2_FLUSH_FACTOR * _l2_bytes(device), dtype=torch.uint8, device=device)
    _warm_up(run, n_sets, plan, torch.cuda.synchronize)
    samples: list[float] = []
    started = time.perf_counter()
    while not _done(samples, time.perf_counter() - started, plan):
        if flush is not None:
            flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run(len(samples) % n_sets)
        end.record()
        # Device-wide: work the call left on other streams finishes before the next sample starts.
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end))
    return Measurement(samples, "cuda-events", plan)


def _measure_cpu(run: Callable[[int], None], n_sets: int, plan: TimingPlan) -> Measurement:
    flush = torch.empty(CPU_FLUSH_BYTES, dtype=torch.uint8) if plan.l2_state == "cold" else None
    _warm_up(run, n_sets, plan, lambda: None)
    samples: list[float] = []
    started = time.perf_counter()
    while not _done(samples, time.perf_counter() - started, plan):
        if flush is not None:
            flush.fill_(len(samples) & 0xFF)
        begin = time.perf_counter()
        run(len(samples) % n_sets)
        samples.append((time.perf_counter() - begin) * 1e3)
    return Measurement(samples, "perf_counter", plan)
