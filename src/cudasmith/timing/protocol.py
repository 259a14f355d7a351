"""How a call is timed: one protocol for candidates and baselines, on the GPU and on the CPU.

Per sample on the GPU (timing/cuda.py does it): flush L2, queue the call behind a blocking kernel (so the
time the host needs to issue it is not counted), release, synchronize the whole device, and take the
time from CUPTI's records of every kernel, copy and memset the call launched, on any stream, plus the
device's calibrated kernel launch cost (cudasmith.device.launch_cost) where the plan carries one. On the CPU
a monotonic clock times each call (timing/measure.py, whose measure() is where both begin). Warm-up first; then samples, input sets rotating, until the median
is known to TARGET_REL_STDERR or the time cap. A measurement keeps its raw samples; its statistics are
computed from them on demand.

The clocks and synchronisation functions used here are the ones clock.py captured when it was
imported, which the worker does before any candidate code runs: a candidate that patches
`time.perf_counter`, `torch.cuda.synchronize` or `torch.cuda.Event` changes its own view of time,
not the judge's.

Why not NVIDIA's nvbench (`cuda-bench` on PyPI), whose cold protocol this follows: it is a benchmark
driver (benchmarks register with it and run under its own `main`, results come back as printed or
JSON reports), not a function that times a callable and returns samples; it times the work on its own
stream only, so work a candidate hides on another stream is not counted; it times the same inputs on
every call, where we rotate input sets and hand each timed output back for re-checking; and it is not
installed on the GPU machines. Its blocking kernel, L2 flush, throttle check and noise-based stop rule
are reproduced here in a few hundred lines.
"""

from __future__ import annotations

import bisect
import itertools
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from cudasmith.errors import CudasmithError
from cudasmith.jsontypes import JsonDict

# time.perf_counter as it was when this module was imported, as clock.py captures it (the worker imports
# both before any solution): this module needs no more of clock.py, whose CUDA references import torch.
_perf_counter = time.perf_counter

# Warm-up: at least this many calls (and at least one per input set) and this much time before the
# first sample, so compilation, autotuning, lazy initialisation and clock ramp-up stay out of the numbers.
WARMUP_CALLS = 3
WARMUP_MS = 50.0
# A window that follows another on a GPU a moment later (harness/lease.py: the configs of one candidate's
# hold) finds the device busy until then, its clocks up: this much warm-up time, the calls as above.
# timing_fidelity.py --warmup-ms 10 passed every repeatability, accuracy and sensitivity criterion on an H100
# (worst spread 0.78 % at 20 µs and above, 1.11 % under), each kernel but a process's first timed right
# after another.
WARMUP_MS_FOLLOWING = 10.0
# Stop rule (nvbench's, with the median): stop once there are MIN_SAMPLES samples, at least
# MIN_SAMPLING_S seconds of sampling and the median's relative standard error is at most
# TARGET_REL_STDERR (or its interval is one tick of the clock wide, below); or after MAX_SECONDS of
# sampling with at least MIN_SAMPLES_UNDER_CAP samples; or at MAX_SAMPLES.
MIN_SAMPLES = 10
MIN_SAMPLES_UNDER_CAP = 3
# On a GPU the rule reads the CUPTI spans that are reported, a chunk of samples at a time (timing/spans.py):
# CUDA events jitter by 8 % on a 3 µs kernel where its spans show 0.03 % (H100), so a rule reading events
# reached 0.5 % only at the cap. Where CUPTI is missing, it reads the events, and 600 samples (about 0.2 s
# of a 3 µs kernel with a cold L2 on an H100) bound what such a kernel costs.
MAX_SAMPLES = 600
TARGET_REL_STDERR = 0.005
# A median whose 95 % interval spans at most one tick of the clock is known as well as that clock can tell,
# where that tick is at most MAX_TICK_REL of the median (the repeatability promised under 20 µs). On an
# H100 the CUPTI spans of a 1.5 µs kernel fall on values 32 ns apart: an interval of one tick is 2 % wide,
# under the 0.5 % target only when both bounds land on the same tick (243 to 600 samples, or no stop).
# The spans are read off two timestamps each rounded to the nanosecond, so a tick's values spread by a
# nanosecond or two (1631 to 1633 ns, 1663 to 1665 ns, … on an H100): values within TICK_JITTER_MS of
# their neighbour are one tick. Read as a tick, that jitter left the rule a 1 ns tick, and a 1.5 µs
# kernel sampled to the 600-sample cap (1.2 s instead of 0.1 s) whenever its median fell between ticks.
MAX_TICK_REL = 0.03
TICK_JITTER_MS = 2.5e-6
# The stop reason of a measurement that met the noise target (any other left its median noisier).
NOISE_TARGET_STOP = "noise target"
# A tenth of a second of sampling (hundreds of samples of a short kernel, ten or more of a long one) gives
# medians that agree across processes: timing_fidelity.py --min-sampling-s 0.1 passed every repeatability,
# accuracy and sensitivity criterion on an H100 (worst spread 0.53 % under 20 µs, 0.41 % above).
MIN_SAMPLING_S = 0.1
MAX_SECONDS = 2.0
# CPU configs are small (runner.CPU_MAX_CONFIG_BYTES): a shorter minimum and cap keep CPU evaluations quick.
MIN_SAMPLING_S_CPU = 0.1
MAX_SECONDS_CPU = 0.5
# On the CPU the warm-up time, the minimum sampling time and the cap are counted in the CPU time of the two
# threads that prepare and make the calls (timing/calling.py), not in wall time: on a loaded machine a call
# waits for a core, and counted in wall time fewer calls would be made, so that which calls a judge makes (and
# what a candidate that changes its behaviour after some calls is caught doing) would depend on the load. A
# call that sleeps spends no CPU time: the budgets also end at this many times their length in wall time.
WALL_BACKSTOP_FACTOR = 4.0
# z for a two-sided 95 % interval.
Z95 = 1.96
# The screen (a search's first, short measurement of a correct candidate; harness/confirm.py): exclusive like
# every window, a few milliseconds a config: one warm-up call per input set and SCREEN_WARMUP_MS, then at
# least SCREEN_MIN_SAMPLES samples over SCREEN_MIN_SAMPLING_S, stopping at SCREEN_TARGET_REL_STDERR or
# SCREEN_MAX_SECONDS. Its median tells a kernel that could be the best from one that cannot; the full
# protocol times the former again, and only a full measurement is ever reported as a time.
SCREEN_WARMUP_CALLS = 1
SCREEN_WARMUP_MS = 2.0
SCREEN_MIN_SAMPLES = 5
SCREEN_MIN_SAMPLING_S = 0.003
SCREEN_MAX_SAMPLES = 100
SCREEN_MAX_SECONDS = 0.02
SCREEN_TARGET_REL_STDERR = 0.02
# How much slower than the bar (the run's best confirmed kernel, or the baseline) a screened candidate may
# look and still get the full protocol, beyond the spread of its own screen (its median's 95 % interval,
# which harness/confirm.py adds). It covers what the interval does not: a screen that is pessimistic as a
# whole (its short warm-up, a clock still ramping). How it is chosen: benchmarks/screen_spread.py screens
# and fully times the same kernels, several times each, and prints the largest pessimism seen (screened
# median over full median, less one) beyond the screen's own interval; the margin is twice that, rounded
# up to whole per cent, and never under 5 %. Until the H200 figures are in, 10 %: the worst spread of full
# measurements across processes was under 1.2 % (timing_fidelity.py, H100), a short screen's is wider.
SCREEN_MARGIN = 0.10

L2_STATES = ("cold", "hot")
# queued: each call is issued while the GPU waits behind a blocking kernel, then runs unhindered by
# the host; graph: each input set's call is captured once as a CUDA graph and the graph is replayed.
LAUNCH_MODES = ("queued", "graph")
# Raw per-sample lists of a measurement summary (left out of verdicts unless asked for).
RAW_KEYS = ("samples_ms", "span_ms", "event_ms", "host_ms", "clock_mhz", "work")


class TimingError(CudasmithError):
    """The call cannot be timed the way the plan asks (a CUDA graph that cannot be captured, …)."""


@dataclass(frozen=True)
class TimingPlan:
    """What to measure and when to stop; recorded with every measurement."""

    l2_state: str = "cold"
    launch: str = "queued"
    # The device's calibrated launch cost in microseconds (cudasmith.device.launch_cost), added once to
    # each call's CUPTI span; None leaves the bare spans (never calibrated, or measuring that cost itself).
    launch_us: float | None = None
    warmup_calls: int = WARMUP_CALLS
    warmup_ms: float = WARMUP_MS
    min_samples: int = MIN_SAMPLES
    min_sampling_s: float = MIN_SAMPLING_S
    max_samples: int = MAX_SAMPLES
    max_seconds: float = MAX_SECONDS
    target_rel_stderr: float = TARGET_REL_STDERR

    def __post_init__(self) -> None:
        if self.l2_state not in L2_STATES:
            raise ValueError(f"l2_state must be one of {L2_STATES}, not {self.l2_state!r}")
        if self.launch not in LAUNCH_MODES:
            raise ValueError(f"launch must be one of {LAUNCH_MODES}, not {self.launch!r}")


def default_plan(
    device: str, l2_state: str = "cold", launch: str = "queued", launch_us: float | None = None
) -> TimingPlan:
    """The protocol's plan for a device; `launch_us` is the GPU's calibrated launch cost, if any."""
    if device.startswith("cuda"):
        return TimingPlan(l2_state=l2_state, launch=launch, launch_us=launch_us)
    return TimingPlan(
        l2_state=l2_state, launch=launch, min_sampling_s=MIN_SAMPLING_S_CPU, max_seconds=MAX_SECONDS_CPU
    )


def screen_plan(plan: TimingPlan) -> TimingPlan:
    """The screen's plan (see SCREEN_MARGIN) beside a session's full `plan`: the same L2 state, launch mode
    and launch cost, a few milliseconds of warm-up and sampling."""
    return replace(
        plan,
        warmup_calls=SCREEN_WARMUP_CALLS,
        warmup_ms=SCREEN_WARMUP_MS,
        min_samples=SCREEN_MIN_SAMPLES,
        min_sampling_s=SCREEN_MIN_SAMPLING_S,
        max_samples=SCREEN_MAX_SAMPLES,
        max_seconds=SCREEN_MAX_SECONDS,
        target_rel_stderr=SCREEN_TARGET_REL_STDERR,
    )


def median_ci95(ordered: list[float]) -> tuple[float, float]:
    """A distribution-free 95 % confidence interval of the median of sorted samples (order statistics)."""
    n = len(ordered)
    half_width = Z95 * math.sqrt(n) / 2
    low = max(0, math.floor(n / 2 - half_width) - 1)
    high = min(n - 1, math.ceil(n / 2 + half_width))
    return ordered[low], ordered[high]


def _tick_groups(ordered: list[float]) -> list[list[float]]:
    """Sorted samples in groups, each value within TICK_JITTER_MS of the one before it: one tick each."""
    groups: list[list[float]] = []
    for value in ordered:
        if groups and value - groups[-1][-1] <= TICK_JITTER_MS:
            groups[-1].append(value)
        else:
            groups.append([value])
    return groups


def clock_tick(ordered: list[float]) -> float:
    """The clock's tick as sorted samples show it: the smallest gap between the medians of two adjacent
    ticks' values (see TICK_JITTER_MS); 0.0 where all values are one tick."""
    centres = [statistics.median(group) for group in _tick_groups(ordered)]
    return min((high - low for low, high in itertools.pairwise(centres)), default=0.0)


def within_one_tick(ordered: list[float]) -> bool:
    """Whether the median's 95 % interval spans at most one tick of a clock that ticks (quantised samples),
    a tick of at most MAX_TICK_REL of the median; each bound may be off its tick by the jitter."""
    tick = clock_tick(ordered)
    if tick <= 0 or tick > MAX_TICK_REL * statistics.median(ordered):  # no tick: all values are one
        return False
    low, high = median_ci95(ordered)
    return high - low <= tick + 2 * TICK_JITTER_MS


def median_rel_stderr(ordered: list[float]) -> float:
    """The median's standard error over the median, read off its 95 % interval: the stop rule's noise."""
    if len(ordered) < 2:
        return math.inf
    median = statistics.median(ordered)
    low, high = median_ci95(ordered)
    return (high - low) / (2 * Z95) / median if median > 0 else math.inf


@dataclass
class WorkTotal:
    """What ran under one name in a measurement's kept samples: its kind (kernel, memcpy, memset…), its
    nanoseconds in all, and how many times it ran."""

    kind: str
    ns: int = 0
    calls: int = 0


@dataclass
class Measurement:
    """Raw samples of one timed callable, in milliseconds, and how they were taken.

    `samples_ms` are the times the statistics describe. On the GPU they come with the CUDA-event time
    of the same calls on the timing stream (`event_ms`), the host's time to issue each call (`host_ms`)
    and the SM clock while each call waited to start (`clock_mhz`). Where the samples are CUPTI spans
    with the device's launch cost added (method "cupti+launch"), `span_ms` keeps the bare spans.
    """

    samples_ms: list[float]
    method: str
    plan: TimingPlan = field(default_factory=TimingPlan)
    span_ms: list[float] = field(default_factory=list)
    event_ms: list[float] = field(default_factory=list)
    host_ms: list[float] = field(default_factory=list)
    clock_mhz: list[float] = field(default_factory=list)
    stop: str = ""
    discarded: int = 0
    warnings: list[str] = field(default_factory=list)
    # What ran in the kept samples (GPU only), per name.
    work: dict[str, WorkTotal] = field(default_factory=dict)
    # Where the measurement's wall time went, in seconds: "warmup", "sampling", "records" (reading
    # CUPTI's records at checkpoints and at the end, on a GPU); on a GPU also, within "sampling", "prepare"
    # (each sample's preparation: the reset of persisting L2 lines, the flush) and "discarded" (samples not
    # kept: timed out behind the blocker, or throttled, with the waits after them).
    phases_s: dict[str, float] = field(default_factory=dict)
    # The warm-up calls before the samples, and their own times added up (on the CPU each call's time as
    # a sample's is taken; on a GPU the host's time to issue it): what the parent's clock check adds to
    # the samples (harness/witnesses/bracket.py).
    warmup_calls: int = 0
    warmup_ms: float = 0.0
    # The timed calls made, their samples kept or not (a GPU's throttled or unqueued samples are not): the
    # numbers the calls kept for the judge's re-check go by (0: as many as the samples).
    calls: int = 0

    @property
    def median_ms(self) -> float:
        """The median sample."""
        return statistics.median(self.samples_ms)

    @property
    def ci95_ms(self) -> tuple[float, float]:
        """A distribution-free 95 % confidence interval of the median."""
        return median_ci95(sorted(self.samples_ms))

    @property
    def rel_stderr(self) -> float:
        """The median's relative standard error."""
        return median_rel_stderr(sorted(self.samples_ms))

    def summary(self) -> JsonDict:
        """A JSON-ready summary with the raw samples."""
        low, high = self.ci95_ms
        return {
            "median_ms": self.median_ms,
            "ci95_ms": [low, high],
            "rel_stderr": self.rel_stderr,
            "n": len(self.samples_ms),
            "method": self.method,
            "stop": self.stop,
            "discarded": self.discarded,
            "warnings": self.warnings,
            "plan": asdict(self.plan),
            "phases_s": self.phases_s,
            "span_median_ms": statistics.median(self.span_ms) if self.span_ms else None,
            "event_median_ms": statistics.median(self.event_ms) if self.event_ms else None,
            "host_median_ms": statistics.median(self.host_ms) if self.host_ms else None,
            "clock_median_mhz": statistics.median(self.clock_mhz) if self.clock_mhz else None,
            **{key: getattr(self, key) for key in RAW_KEYS if key != "work"},
            "work": {name: asdict(total) for name, total in self.work.items()},
        }


class StopRule:
    """The stop rule, fed one sample at a time; the clock starts when it is made.

    The noise is judged on the samples given to add(), or, where the reported times arrive in chunks
    (the GPU's CUPTI spans), on those last given to judge_on(): samples between chunks are only counted
    (tally()), so the rule never mixes two measures.
    """

    def __init__(self, plan: TimingPlan, clock: Callable[[], float] | None = None) -> None:
        """`clock`: what the sampling time is counted on, in seconds (wall time by default; see
        WALL_BACKSTOP_FACTOR for the CPU's)."""
        self.plan = plan
        self.ordered: list[float] = []
        self.count = 0
        self.clock = clock or _perf_counter
        self.started = self.clock()
        self.wall_started = _perf_counter()
        self._one_tick: bool | None = None  # within_one_tick(self.ordered), once asked

    def add(self, sample_ms: float) -> None:
        bisect.insort(self.ordered, sample_ms)
        self.count += 1
        self._one_tick = None

    def tally(self) -> None:
        """Count a sample whose reported time comes later, with its chunk."""
        self.count += 1

    def judge_on(self, samples_ms: list[float]) -> None:
        """Judge the noise on these samples (every sample counted so far, as reported) from now on."""
        self.ordered = sorted(samples_ms)
        self._one_tick = None

    def _elapsed_s(self) -> float:
        """Seconds on the rule's clock, or the wall's share of the backstop where that is further on."""
        elapsed = self.clock() - self.started
        if self.clock is not _perf_counter:
            elapsed = max(elapsed, (_perf_counter() - self.wall_started) / WALL_BACKSTOP_FACTOR)
        return elapsed

    def minimums_met(self) -> bool:
        """Enough samples and enough time for the noise target to be read at all."""
        return self.count >= self.plan.min_samples and self._elapsed_s() >= self.plan.min_sampling_s

    def reason(self) -> str | None:
        """Why sampling should stop now, or None to go on."""
        n, elapsed_s = self.count, self._elapsed_s()
        if n >= self.plan.max_samples:
            return "max samples"
        if elapsed_s >= self.plan.max_seconds and n >= MIN_SAMPLES_UNDER_CAP:
            return "time cap"
        if self.minimums_met() and (
            median_rel_stderr(self.ordered) <= self.plan.target_rel_stderr or self._within_one_tick()
        ):
            return NOISE_TARGET_STOP
        return None

    def _within_one_tick(self) -> bool:
        if self._one_tick is None:
            self._one_tick = within_one_tick(self.ordered)
        return self._one_tick


def warm_up(
    call: Callable[[int], tuple[float, Any]],
    n_sets: int,
    plan: TimingPlan,
    sync: Callable[[], None],
    hooks: CallHooks,
    clock: Callable[[], float] | None = None,
) -> tuple[int, float]:
    """Call `call` (which returns the call's own time in milliseconds and its output) on every input set,
    and on until the plan's warm-up calls and time are spent (time on `clock`, as StopRule counts it); the
    hooks run around each call as around a sample (with `sample` None), so warm-up calls see inputs
    prepared exactly as timed calls do. Returns the calls made and their times added up."""
    clock = clock or _perf_counter
    started, wall_started = clock(), _perf_counter()
    called = hooks.called  # bound before the first call: see CallHooks
    calls, total_ms = 0, 0.0

    def elapsed_ms() -> float:
        elapsed = clock() - started
        if clock is not _perf_counter:
            elapsed = max(elapsed, (_perf_counter() - wall_started) / WALL_BACKSTOP_FACTOR)
        return elapsed * 1e3

    while calls < max(plan.warmup_calls, n_sets) or elapsed_ms() < plan.warmup_ms:
        index = calls % n_sets
        hooks.before(None, index)
        call_ms, output = call(index)
        called(None)
        sync()
        hooks.after(None, index, output, False)
        del output
        calls += 1
        total_ms += call_ms
    return calls, total_ms


class CallHooks:
    """What the caller does around each call, outside the timed region (here: nothing).

    `before(sample, index)` runs before the L2 flush of sample number `sample` on input set `index`
    (the worker perturbs that set's inputs); `called(sample)` runs first once the call returns, before any
    other code of the timer (the worker checks its integrity: the call was the candidate's code, and until
    that check the timer calls only what it bound before the call, its clock and this hook; on the CPU the
    call ran on the call thread, which hands it back first, timing/calling.py); `after(sample,
    index, output, kept)` runs once the whole device has finished it, whether or not the sample was kept
    (the worker restores the inputs and may keep the output for re-checking). Warm-up calls get the same
    hooks with `sample` None.
    """

    def before(self, sample: int | None, index: int) -> None:
        return None

    def called(self, sample: int | None) -> None:
        return None

    def after(self, sample: int | None, index: int, output: Any, kept: bool) -> None:
        return None
