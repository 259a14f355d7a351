"""GPU samples for the timing protocol: L2 flush, a blocking kernel that queues each call, CUPTI spans.

One sample, all on the timing stream (PyTorch's current stream):
  1. cold L2: a kernel reads L2_FLUSH_FACTOR times the L2 size (reads leave clean lines, so the timed
     call pays no write-back of the flush, as with Nsight Compute's cache control);
  2. the blocking kernel spins on a word of mapped host memory; while it spins it measures the SM
     clock (nvbench's throttle check);
  3. CUDA event, the call, CUDA event: the host issues all of it while the GPU waits, so the host's
     launch overhead is not timed (nvbench's blocking kernel);
  4. release, synchronise the whole device (every stream), read the blocker's record.
The sample's time is the span from the first start to the last end of the GPU work (kernels, copies,
memsets) that the call launched, on any stream, from CUPTI activity records (activity.py), plus the
device's calibrated cost of starting a kernel, which those records leave out (the plan's launch_us). The
CUDA-event time of the same call is kept beside it: it is the stop rule's online estimate and the
fallback when CUPTI is not available.

A call that waits for the GPU itself (`.item()`, a synchronise, more launches than the queue holds)
would wait forever behind the blocker; the blocker gives up after BLOCKER_TIMEOUT_NS and the call is
then timed unqueued, launch gaps included, with a warning.
"""

from __future__ import annotations

import ctypes
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from cudasmith.errors import CudasmithError
from cudasmith.hardware import driver_attributes
from cudasmith.timing import clock
from cudasmith.timing.activity import Activity, ActivityRecorder, span_ms, work_between
from cudasmith.timing.protocol import CallHooks, Measurement, StopRule, TimingError, TimingPlan, warm_up

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
# When most calls show no GPU work in CUPTI's records but their CUDA-event time is at least this, CUPTI
# missed the work (it cannot see some graph launches everywhere) and the event times are used.
CUPTI_BLIND_EVENT_MS = 0.01
# Warm-up calls on a side stream before CUDA-graph capture (libraries set up per-stream state then).
GRAPH_WARMUP_CALLS = 2
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


def _take_sample(
    kit: _Tools | None,
    call: Callable[[int], Any],
    index: int,
    stream: Any,
    cold: bool,
    queued: bool,
    events: tuple[Any, Any],
) -> tuple[_Sample, Any]:
    words = kit.words.host if kit is not None else None
    if kit is not None and words is not None:
        if cold:
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
    try:
        clock.event_record(events[0], stream)
        begin = clock.perf_counter()
        output = call(index)
        host_ms = (clock.perf_counter() - begin) * 1e3
        clock.event_record(events[1], stream)
    finally:
        if words is not None:
            words[0] = 1
        clock.cuda_synchronize()
    # The blocker's record: words[1] timed out, words[2] nanoseconds spun, words[3] SM cycles meanwhile.
    clock_mhz = words[3] / words[2] * 1e3 if words is not None and words[2] >= BLOCKER_MIN_SPIN_NS else None
    timed_out = words is not None and words[1] != 0
    return _Sample(clock.event_elapsed_ms(events[0], events[1]), host_ms, clock_mhz, timed_out), output


def _graph_replayer(run: Callable[[int], Any], n_sets: int) -> Callable[[int], Any]:
    """Capture the call on each input set as a CUDA graph; the result replays graph i for input set i."""
    side = clock.Stream()
    side.wait_stream(clock.current_stream())
    with clock.use_stream(side):
        for index in range(n_sets * GRAPH_WARMUP_CALLS):
            run(index % n_sets)
    clock.current_stream().wait_stream(side)
    graphs, outputs = [], []
    for index in range(n_sets):
        graph = clock.CUDAGraph()
        try:
            with clock.graph_capture(graph):
                outputs.append(run(index))
        except Exception as exc:
            first_line = (str(exc).strip().splitlines() or [""])[0][:300]
            raise TimingError(
                f"the call cannot be captured as a CUDA graph ({type(exc).__name__}: {first_line}); "
                "time it without --graph"
            ) from exc
        graphs.append(graph)
    clock.cuda_synchronize()

    def replay(index: int) -> Any:
        graphs[index].replay()
        return outputs[index]

    return replay


def _cupti_samples(
    activities: list[Activity] | None,
    cold: bool,
    taken: list[_Sample],
    kept: list[bool],
    warnings: list[str],
    work_seen: dict[str, dict[str, Any]],
) -> list[float] | None:
    """The kept samples' CUPTI spans, or None (with a warning) when the event times must stand in.

    `work_seen` receives what ran in the kept samples, per name: its kind, total nanoseconds and count.
    """
    if activities is None:
        return None
    work = work_between(activities, READ if cold else BLOCKER, (BLOCKER, READ), closing=CLOSE)
    if len(work) != len(taken):
        warnings.append(
            f"CUPTI saw {len(work)} samples of {len(taken)}: CUDA-event times used "
            "(work on other streams not counted)"
        )
        return None
    kept_work = [items for items, keep in zip(work, kept, strict=True) if keep]
    for items in kept_work:
        for activity in items:
            entry = work_seen.setdefault(activity.name, {"kind": activity.kind, "ns": 0, "calls": 0})
            entry["ns"] += activity.duration_ns
            entry["calls"] += 1
    kept_spans = [span_ms(items) for items in kept_work]
    kept_events = [sample.event_ms for sample, keep in zip(taken, kept, strict=True) if keep]
    empty = [event for span, event in zip(kept_spans, kept_events, strict=True) if span is None]
    if empty and len(empty) * 2 > len(kept_spans) and statistics.median(empty) >= CUPTI_BLIND_EVENT_MS:
        warnings.append(
            f"CUPTI saw no GPU work in {len(empty)} of {len(kept_spans)} calls that took "
            f"{statistics.median(empty) * 1e3:.1f} µs by CUDA events: CUDA-event times used"
        )
        return None
    if empty:
        warnings.append(f"no GPU work at all in {len(empty)} of {len(kept_spans)} timed calls")
    return [0.0 if span is None else span for span in kept_spans]


def with_launch_cost(spans_ms: list[float], launch_ms: float) -> list[float]:
    """CUPTI spans plus the launch cost, once per call; a call with no GPU work stays at zero."""
    return [span + launch_ms if span > 0 else 0.0 for span in spans_ms]


def _judge_sample(sample: _Sample, kit: _Tools | None, queued: bool, reference_mhz: float | None) -> str:
    """'kept', 'timed out' (the call waited for the GPU), or 'throttled' (SM clock well under its best)."""
    if sample.timed_out:
        return "timed out"
    if queued and kit is not None and kit.check_throttle and sample.clock_mhz is not None:
        best = max(reference_mhz or 0.0, sample.clock_mhz)
        if sample.clock_mhz < THROTTLE_FRACTION * best:
            return "throttled"
    return "kept"


def measure_cuda(run: Callable[[int], Any], n_sets: int, plan: TimingPlan, hooks: CallHooks) -> Measurement:
    """The GPU side of timing.measure()."""
    kit = tools(torch.cuda.current_device())
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
    warm_up(run, n_sets, plan, clock.cuda_synchronize, hooks)
    call = _graph_replayer(run, n_sets) if plan.launch == "graph" else run
    events = (clock.Event(enable_timing=True), clock.Event(enable_timing=True))
    recorder: ActivityRecorder | None = None
    if kit is not None:
        try:
            recorder = ActivityRecorder()
        except Exception as exc:
            warnings.append(
                f"CUPTI unavailable ({type(exc).__name__}: {str(exc)[:160]}): CUDA-event times used"
            )
    queued = kit is not None
    reference_mhz = kit.max_clock_mhz if kit is not None else None
    discarded = 0
    taken: list[_Sample] = []
    kept: list[bool] = []
    rule = StopRule(plan)
    activities = None
    try:
        while (stop := rule.reason()) is None:
            number, index = len(taken), len(rule.ordered) % n_sets
            hooks.before(number, index)
            sample, output = _take_sample(kit, call, index, stream, cold, queued, events)
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
                rule.add(sample.event_ms)
            hooks.after(number, index, output, keep == "kept")
            del output
    finally:
        if recorder is not None:
            try:
                activities = recorder.stop()
            except Exception as exc:
                warnings.append(f"CUPTI records lost ({type(exc).__name__}: {str(exc)[:160]})")
    if discarded and kit is not None and kit.check_throttle:
        warnings.append(
            f"{discarded} samples discarded: SM clock under {THROTTLE_FRACTION:.0%} of its maximum"
        )
    kept_samples = [sample for sample, keep in zip(taken, kept, strict=True) if keep]
    event_ms = [sample.event_ms for sample in kept_samples]
    work_seen: dict[str, dict[str, Any]] = {}
    spans = (
        _cupti_samples(activities, cold, taken, kept, warnings, work_seen) if recorder is not None else None
    )
    launch_ms = plan.launch_us / 1e3 if spans is not None and plan.launch_us is not None else None
    if spans is None:
        samples_ms = event_ms
    elif launch_ms is None:
        samples_ms = spans
    else:
        samples_ms = with_launch_cost(spans, launch_ms)
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
    )
