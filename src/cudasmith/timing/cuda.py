"""GPU samples for the timing protocol: L2 flush, a blocking kernel that queues each call, CUPTI spans.

One sample, all on the timing stream (PyTorch's current stream):
  1. cold L2: lines pinned as persisting are made normal (l2.py), then a kernel reads L2_FLUSH_FACTOR
     times the L2 size (reads leave clean lines, so the timed call pays no write-back of the flush, as
     with Nsight Compute's cache control);
  2. the blocking kernel spins on a word of mapped host memory; while it spins it measures the SM
     clock (nvbench's throttle check);
  3. CUDA event, the call, CUDA event: the host issues all of it while the GPU waits, so the host's
     launch overhead is not timed (nvbench's blocking kernel);
  4. release, synchronise the whole device (every stream), read the blocker's record.
The sample's time is the span from the first start to the last end of the GPU work (kernels, copies,
memsets) that the call launched, on any stream, from CUPTI activity records (activity.py), plus the
device's calibrated cost of starting a kernel, which those records leave out (the plan's launch_us). The
stop rule reads those times a chunk of samples at a time (spans.py). The CUDA-event time of the same call
is kept beside it: the fallback when CUPTI is not available.

A call that waits for the GPU itself (`.item()`, a synchronise, more launches than the queue holds)
would wait forever behind the blocker; the blocker gives up after BLOCKER_TIMEOUT_NS and the call is
then timed unqueued, launch gaps included, with a warning.
"""

from __future__ import annotations

import ctypes
import functools
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from cudasmith.errors import CudasmithError
from cudasmith.hardware import driver_attributes
from cudasmith.timing import clock
from cudasmith.timing.graphs import graph_replayer
from cudasmith.timing.l2 import PersistingL2
from cudasmith.timing.protocol import (
    CallHooks,
    Measurement,
    StopRule,
    TimingPlan,
    WorkTotal,
    warm_up,
)
from cudasmith.timing.spans import SpanLog, with_launch_cost

SOURCE = r"""
extern "C" __global__ void cudasmith_blocker(const volatile unsigned long long* release,
                                             unsigned long long min_spin_ns,
                                             unsigned long long timeout_ns,
                                             unsigned long long* record) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    long long cycles = clock64();
    unsigned long long timed_out = 0;
    while (true) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (now - start >= timeout_ns) { timed_out = 1; break; }
        if (*release != 0ull && now - start >= min_spin_ns) break;
    }
    record[0] = timed_out;
    record[1] = now - start;
    record[2] = (unsigned long long)(clock64() - cycles);
    __threadfence_system();
}

// Reads every 16-byte word of a buffer. The buffer holds zeros, so the store never happens; it keeps
// the loads from being optimised away. Two names: the L2 flush, and the bandwidth measurement's read.
#define READ_KERNEL(NAME)                                                                          \
extern "C" __global__ void NAME(const uint4* buffer, unsigned long long count, unsigned int* sink) { \
    unsigned int seen = 0;                                                                         \
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;         \
         i < count; i += (unsigned long long)gridDim.x * blockDim.x) {                             \
        uint4 value = buffer[i];                                                                   \
        seen |= value.x | value.y | value.z | value.w;                                             \
    }                                                                                              \
    if (seen != 0u) *sink = seen;                                                                  \
}
READ_KERNEL(cudasmith_read)
READ_KERNEL(cudasmith_bandwidth_read)

// Closes a sample: GPU work that starts after it (the caller's own, between samples) is not the call's.
extern "C" __global__ void cudasmith_close() {}
"""
BLOCKER, READ, BANDWIDTH_READ, CLOSE = (
    "cudasmith_blocker",
    "cudasmith_read",
    "cudasmith_bandwidth_read",
    "cudasmith_close",
)

# The flush reads this many times the L2 size, evicting everything the previous call left there.
L2_FLUSH_FACTOR = 2
# Flush and read kernels: blocks per SM and threads per block (enough to keep every SM's loads in flight).
READ_BLOCKS_PER_SM = 8
READ_THREADS = 256
# The blocker spins at least this long: enough for its clock estimate to be good to a few per cent
# even where the GPU's global timer ticks once a microsecond.
BLOCKER_MIN_SPIN_NS = 20_000
# Longer than any call needs to be issued by the host; a call still unissued then is waiting for the GPU.
BLOCKER_TIMEOUT_NS = 500_000_000
# nvbench's throttle check: a sample taken while the SM clock is under this fraction of the device's
# maximum is discarded and the GPU left to recover this long; after MAX_THROTTLE_DISCARDS, the check stops.
THROTTLE_FRACTION = 0.75
THROTTLE_RECOVERY_S = 0.05
MAX_THROTTLE_DISCARDS = 10
# A call whose host time exceeds its GPU time by this factor, and this many milliseconds, gets a
# warning: work the host does is not in a GPU time (computing on the CPU and copying would not count).
HOST_HEAVY_RATIO = 2.0
HOST_HEAVY_MS = 1.0


class _MappedWords:
    """A few 64-bit words of page-locked host memory that kernels read and write directly."""

    def __init__(self, count: int) -> None:
        from cuda.bindings import driver

        flags = driver.CU_MEMHOSTALLOC_DEVICEMAP | driver.CU_MEMHOSTALLOC_PORTABLE
        error, host_pointer = driver.cuMemHostAlloc(8 * count, flags)
        if int(error) != 0:
            raise CudasmithError(f"cuMemHostAlloc failed: {error}")
        error, device_pointer = driver.cuMemHostGetDevicePointer(host_pointer, 0)
        if int(error) != 0:
            raise CudasmithError(f"cuMemHostGetDevicePointer failed: {error}")
        self.host = (ctypes.c_uint64 * count).from_address(int(host_pointer))
        self.device = int(device_pointer)


@dataclass
class _Tools:
    """What sampling needs on one GPU, made once per process."""

    blocker: Any
    read: Any
    bandwidth_read: Any
    close: Any
    words: _MappedWords
    sm_count: int
    l2_bytes: int
    max_clock_mhz: float | None
    sink: torch.Tensor
    flush_buffer: torch.Tensor | None = None
    # Off for the rest of the process once the throttle check has discarded MAX_THROTTLE_DISCARDS in a row.
    check_throttle: bool = True

    def flush(self, stream: int) -> None:
        """Read L2_FLUSH_FACTOR times the L2 size on `stream`."""
        assert self.flush_buffer is not None, "prepare_flush() first"
        self.launch_read(self.flush_buffer, stream, self.read)

    def prepare_flush(self) -> None:
        """Allocate the flush buffer (once), before timing starts."""
        if self.flush_buffer is None:
            size = -(-L2_FLUSH_FACTOR * self.l2_bytes // 16) * 16
            self.flush_buffer = torch.zeros(size, dtype=torch.uint8, device="cuda")

    def launch_read(self, buffer: torch.Tensor, stream: int, kernel: Any = None) -> None:
        """Read every byte of `buffer` (a multiple of 16 bytes) on `stream` (the bandwidth kernel by default)."""
        clock.launch_kernel(
            kernel or self.bandwidth_read,
            buffer,
            ctypes.c_uint64(buffer.numel() * buffer.element_size() // 16),
            self.sink,
            grid=self.sm_count * READ_BLOCKS_PER_SM,
            block=READ_THREADS,
            stream=stream,
        )


_tools: dict[int, _Tools | str] = {}


def _max_clock_mhz(device_index: int) -> float | None:
    """The SM clock the device may boost to, in MHz (None where the driver does not say)."""
    khz = driver_attributes(device_index, {"khz": "CU_DEVICE_ATTRIBUTE_CLOCK_RATE"}).get("khz", 0)
    return khz / 1e3 if khz > 0 else None


def tools(device_index: int) -> _Tools | str:
    """The sampling tools for a GPU, or why they cannot be had (then calls are timed with events alone)."""
    if device_index not in _tools:
        try:
            compile_cuda = clock.compile_cuda
            torch.zeros(1, device=f"cuda:{device_index}")  # the primary context exists and is current
            props = torch.cuda.get_device_properties(device_index)
            _tools[device_index] = _Tools(
                blocker=compile_cuda(SOURCE, BLOCKER),
                read=compile_cuda(SOURCE, READ),
                bandwidth_read=compile_cuda(SOURCE, BANDWIDTH_READ),
                close=compile_cuda(SOURCE, CLOSE),
                words=_MappedWords(4),
                sm_count=props.multi_processor_count,
                l2_bytes=int(getattr(props, "L2_cache_size", 0)) or 64 * 1024**2,
                max_clock_mhz=_max_clock_mhz(device_index),
                sink=torch.zeros(1, dtype=torch.int32, device=f"cuda:{device_index}"),
            )
        except Exception as exc:  # no cuda-python, no NVRTC, no driver: probing the environment
            _tools[device_index] = f"{type(exc).__name__}: {str(exc)[:200]}"
    return _tools[device_index]


@dataclass
class _Sample:
    """One timed call (its output is not kept: a measurement may take thousands of samples)."""

    event_ms: float
    host_ms: float
    clock_mhz: float | None
    timed_out: bool
    # The judge's own work before the call, on the host: the reset of persisting L2 lines (with the wait
    # for the device it needs) and issuing the flush; the parent's clock counts it as the judge's.
    prepare_ms: float = 0.0


def _take_sample(
    kit: _Tools | None,
    call: Callable[[int], Any],
    index: int,
    stream: Any,
    cold: bool,
    queued: bool,
    events: tuple[Any, Any],
    called: Callable[[], None],
    pinned: PersistingL2 | None = None,
    perf: Callable[[], float] = clock.perf_counter,
) -> tuple[_Sample, Any]:
    """One sample; `called` runs first once the call returns (the worker's integrity check), with nothing
    looked up before it: `perf` is the clock, bound when this module was imported."""
    words = kit.words.host if kit is not None else None
    prepared = perf()
    if kit is not None and words is not None:
        if cold:
            if pinned is not None and pinned.active:
                # The caller's preparation (inputs perturbed on this stream, under whatever window the
                # stream carries) has finished, so no line it pins escapes the reset.
                clock.cuda_synchronize()
                pinned.before_sample(stream.cuda_stream)
            kit.flush(stream.cuda_stream)
        words[0], words[1], words[2], words[3] = (0 if queued else 1), 0, 0, 0
        clock.launch_kernel(
            kit.blocker,
            kit.words.device,
            BLOCKER_MIN_SPIN_NS if queued else 0,
            BLOCKER_TIMEOUT_NS,
            kit.words.device + 8,
            grid=1,
            block=1,
            stream=stream.cuda_stream,
        )
    prepare_ms = (perf() - prepared) * 1e3
    try:
        clock.event_record(events[0], stream)
        begin = perf()
        output = call(index)
        end = perf()
        called()
        host_ms = (end - begin) * 1e3
        clock.event_record(events[1], stream)
    finally:
        if words is not None:
            words[0] = 1
        clock.cuda_synchronize()
    # The blocker's record: words[1] timed out, words[2] nanoseconds spun, words[3] SM cycles meanwhile.
    clock_mhz = words[3] / words[2] * 1e3 if words is not None and words[2] >= BLOCKER_MIN_SPIN_NS else None
    timed_out = words is not None and words[1] != 0
    sample = _Sample(clock.event_elapsed_ms(events[0], events[1]), host_ms, clock_mhz, timed_out, prepare_ms)
    return sample, output


def _judge_sample(sample: _Sample, kit: _Tools | None, queued: bool, reference_mhz: float | None) -> str:
    """'kept', 'timed out' (the call waited for the GPU), or 'throttled' (SM clock well under its best)."""
    if sample.timed_out:
        return "timed out"
    if queued and kit is not None and kit.check_throttle and sample.clock_mhz is not None:
        best = max(reference_mhz or 0.0, sample.clock_mhz)
        if sample.clock_mhz < THROTTLE_FRACTION * best:
            return "throttled"
    return "kept"


def _judge_on_spans(
    rule: StopRule, log: SpanLog, taken: list[_Sample], kept: list[bool], launch_ms: float | None
) -> bool:
    """At a checkpoint: the rule judges the spans of every kept sample so far, as they will be reported;
    or, where CUPTI lost or missed the work (or there is none), the CUDA-event times from now on. Whether
    the rule still reads spans."""
    event_ms = [sample.event_ms for sample, keep in zip(taken, kept, strict=True) if keep]
    spans = log.spans(kept, event_ms, [], {})  # the final reading gives the warnings and the work seen
    if spans is None or not spans or statistics.median(spans) <= 0:
        rule.judge_on(event_ms)
        return False
    rule.judge_on(spans if launch_ms is None else with_launch_cost(spans, launch_ms))
    return True


def measure_cuda(run: Callable[[int], Any], n_sets: int, plan: TimingPlan, hooks: CallHooks) -> Measurement:
    """The GPU side of timing.measure()."""
    begun = clock.perf_counter()
    kit: _Tools | str | None = tools(torch.cuda.current_device())
    warnings: list[str] = []
    if isinstance(kit, str):
        warnings.append(f"no blocking kernel or L2 flush kernel ({kit}): calls timed unqueued")
        kit = None
    cold = plan.l2_state == "cold"
    if cold and kit is None:
        warnings.append("L2 not flushed between calls")
    if cold and kit is not None:
        kit.prepare_flush()
    stream = clock.current_stream()
    # Bound before the first call: between a call's return and its check (hooks.called) nothing is looked up.
    called, partial, perf = hooks.called, functools.partial, clock.perf_counter

    def issued(index: int) -> tuple[float, Any]:  # a warm-up call: the host's time to issue it
        begin = perf()
        output = run(index)
        return (perf() - begin) * 1e3, output

    warmup_calls, warmup_ms = warm_up(issued, n_sets, plan, clock.cuda_synchronize, hooks)
    call = graph_replayer(run, n_sets, called) if plan.launch == "graph" else run
    warmed = clock.perf_counter()
    events = (clock.Event(enable_timing=True), clock.Event(enable_timing=True))
    log = SpanLog(READ if cold else BLOCKER, (BLOCKER, READ), CLOSE, clock.cuda_synchronize)
    launch_ms = plan.launch_us / 1e3 if plan.launch_us is not None else None
    pinned = PersistingL2() if cold and kit is not None else None
    queued = kit is not None
    reference_mhz = kit.max_clock_mhz if kit is not None else None
    discarded = 0
    taken: list[_Sample] = []
    kept: list[bool] = []
    records_s = 0.0
    if pinned is not None:
        pinned.hold()
    if kit is not None:
        log.open(0)
    rule = StopRule(plan)
    # The rule reads the CUPTI spans reported, at checkpoints; the CUDA-event times of each sample where
    # there are no spans to read.
    on_spans = log.recording
    try:
        while True:
            stop = rule.reason()
            if stop is None and on_spans and log.due(rule.count) and rule.minimums_met():
                began = clock.perf_counter()
                log.close(len(taken))
                on_spans = _judge_on_spans(rule, log, taken, kept, launch_ms)
                log.checked(rule.count, plan.min_samples)
                stop = rule.reason()
                if stop is None:  # recording on, whatever came of it: the worker checks it is on
                    log.open(len(taken))
                records_s += clock.perf_counter() - began
            if stop is not None:
                break
            number, index = len(taken), rule.count % n_sets
            hooks.before(number, index)
            sample, output = _take_sample(
                kit, call, index, stream, cold, queued, events, partial(called, number), pinned
            )
            if kit is not None:  # after the whole device finished the call, before the hooks' own work
                clock.launch_kernel(kit.close, grid=1, block=1, stream=stream.cuda_stream)
            taken.append(sample)
            keep = _judge_sample(sample, kit, queued, reference_mhz)
            if sample.timed_out:
                queued = False
                warnings.append(
                    "the call waits for the GPU (it synchronises, or issues more launches than the queue "
                    "holds): timed unqueued, so launch gaps count"
                )
            elif keep == "throttled":
                assert kit is not None
                discarded += 1
                if discarded >= MAX_THROTTLE_DISCARDS:
                    kit.check_throttle = False
                    warnings.append(f"the GPU stayed throttled: {discarded} samples discarded, then kept")
                clock.sleep(THROTTLE_RECOVERY_S)
            if sample.clock_mhz is not None and queued and kit is not None:
                reference_mhz = max(reference_mhz or 0.0, sample.clock_mhz)
            kept.append(keep == "kept")
            if keep == "kept":
                if on_spans:
                    rule.tally()
                else:
                    rule.add(sample.event_ms)
            hooks.after(number, index, output, keep == "kept")
            del output
    finally:
        began = clock.perf_counter()
        log.close(len(taken))
        records_s += clock.perf_counter() - began
        if pinned is not None:
            pinned.release()
            warnings += pinned.warnings
    sampled = clock.perf_counter()
    phases = {"warmup": warmed - begun, "sampling": sampled - warmed - records_s}
    if discarded and kit is not None and kit.check_throttle:
        warnings.append(
            f"{discarded} samples discarded: SM clock under {THROTTLE_FRACTION:.0%} of its maximum"
        )
    kept_samples = [sample for sample, keep in zip(taken, kept, strict=True) if keep]
    event_ms = [sample.event_ms for sample in kept_samples]
    work_seen: dict[str, WorkTotal] = {}
    spans = log.spans(kept, event_ms, warnings, work_seen) if kit is not None else None
    if spans is None:
        samples_ms, launch_ms = event_ms, None
    else:
        samples_ms = spans if launch_ms is None else with_launch_cost(spans, launch_ms)
    host_ms = [sample.host_ms for sample in kept_samples]
    if samples_ms and host_ms:
        host, gpu = statistics.median(host_ms), statistics.median(samples_ms)
        if host > max(HOST_HEAVY_RATIO * gpu, HOST_HEAVY_MS):
            warnings.append(
                f"the call spends {host:.3f} ms on the host for {gpu:.3f} ms on the GPU: "
                "host time is not in the GPU time (launch-bound, or work done on the CPU)"
            )
    unqueued = "" if queued else ", unqueued"
    method = "cuda-events" if spans is None else "cupti" if launch_ms is None else "cupti+launch"
    phases["records"] = records_s + clock.perf_counter() - sampled
    # The judge's own time around the samples, for the parent's clock (witnesses/bracket.py): each sample's
    # preparation, and the samples not kept (a call that waited for the GPU behind the blocker until its
    # timeout, a throttled one) with the waits after them.
    phases["prepare"] = sum(sample.prepare_ms for sample in taken) / 1e3
    not_kept = (sample for sample, keep in zip(taken, kept, strict=True) if not keep)
    phases["discarded"] = (
        sum(s.event_ms + s.host_ms for s in not_kept) / 1e3 + discarded * THROTTLE_RECOVERY_S
    )
    return Measurement(
        samples_ms=samples_ms,
        method=method + unqueued,
        plan=plan,
        span_ms=spans if launch_ms is not None and spans is not None else [],
        event_ms=event_ms,
        host_ms=host_ms,
        clock_mhz=[sample.clock_mhz for sample in kept_samples if sample.clock_mhz is not None],
        work=work_seen,
        stop=stop,
        discarded=discarded,
        warnings=warnings,
        phases_s=phases,
        warmup_calls=warmup_calls,
        warmup_ms=warmup_ms,
        calls=len(taken),
    )
