"""The profiler as the judge drives it: operators on every thread, and on a GPU every kernel, copy and
memset, between a start and a stop that prove the recording whole.

Operators are recorded on every thread of the process, not only the caller's: PyTorch on a helper thread
(`threading`, a raw `_thread`, `asyncio.to_thread`) that ends before forward returns is still seen. In that
mode the profiler's thread-local "enabled" flag reads False, so a recording is proved whole otherwise: two
ranges of fresh random names, one after the start and one before the stop, must both be in its records
(switched off, or restarted, in between, one is missing). The records are read through accessors captured
before any solution loaded (timing/activity.py), never through the classes a candidate could patch.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch

from cudasmith.harness.workers.races.streams import SYNC_KINDS, StreamOp, sync_op
from cudasmith.timing import clock
from cudasmith.timing.activity import (
    EVENT_RECORD,
    Activity,
    activity_kind,
    event_correlation,
    event_device_type,
    event_duration_ns,
    event_metadata,
    event_name,
    event_start_ns,
    event_stream,
    event_thread,
    result_events,
)
from cudasmith.timing.teardown import teardowns

GPU_WORK_KINDS = ("kernel", "gpu_memcpy", "gpu_memset")


@dataclass(frozen=True)
class CpuEvent:
    """One RecordFunction range: an operator or an annotation, on one thread (nanoseconds)."""

    name: str
    start_ns: int
    end_ns: int
    thread: int
    kind: str


def split_events(
    events: Iterable[Any], cuda_device_type: Any
) -> tuple[list[CpuEvent], list[Activity], list[StreamOp]]:
    """Kineto's events as operator ranges on the CPU, work on the GPU (with its stream and correlation id)
    and the GPU's synchronisations (races/streams.py), read through the accessors captured before any solution
    loaded."""
    cpu: list[CpuEvent] = []
    gpu: list[Activity] = []
    syncs: list[StreamOp] = []
    for event in events:
        kind = activity_kind(event)
        name = event_name(event)
        start = event_start_ns(event)
        end = start + event_duration_ns(event)
        if event_device_type(event) == cuda_device_type:
            # By name too: where torch's records of CUPTI's synchronisations carry another activity type, a
            # stream's wait must still be read as a wait, never taken for a kernel that is not the solution's.
            # An event's record (CUPTI's CUDA_EVENT) says which stream and call a wait's event came from.
            if kind in ("cuda_sync", "cuda_event") or name in SYNC_KINDS or name == EVENT_RECORD:
                metadata = event_metadata(event) if event_metadata is not None else ""
                if op := sync_op(name, event_correlation(event), event_stream(event), metadata):
                    syncs.append(op)
            elif kind in GPU_WORK_KINDS and "sync" not in name.lower():
                gpu.append(Activity(name, start, end, kind, event_stream(event), event_correlation(event)))
        elif kind in ("cpu_op", "user_annotation", "cpu_event"):
            cpu.append(CpuEvent(name, start, end, event_thread(event), kind))
    # Without activity types (older torch), annotations mirrored onto the GPU's timeline look like kernels:
    # they carry the names of ranges on the CPU, which no kernel has.
    ranges = {event.name for event in cpu}
    return cpu, [activity for activity in gpu if activity.name not in ranges], syncs


# CUPTI's activity kind of a CUDA event's record (cupti_activity.h). Kineto reads these records where it
# finds them, and names from them the stream and call a wait's event was recorded in (races/streams.py); it
# does not ask for them itself on every torch (2.11 did not), so the judge can switch the kind on around a
# recording of its own and off before Kineto stops. The switch is on unless CUDASMITH_CUDA_EVENT_RECORDS is
# set to anything but 1 (=0 switches it off; read once, as the worker imports this module, before any
# solution).
#
# Under the switch, CUPTI must not stay attached from one recording with the kind on to the next: the
# judge's own cuEventRecord hung at the third such recording on the H200 and the H100
# (benchmarks/stream_records.py). Kineto tears CUPTI down at a stop where TEARDOWN_CUPTI=1, but finishes
# the teardown only at the next CUDA API call (timing/teardown.py). Unwaited, the whole GPU suite on an H100
# (2026-12-07) refused honest kernels in nearly every timed evaluation: the timing sampler's next chunk of
# samples lost its records ("records ... cut off while timed"). So the judge sets Kineto's switch around
# each stop (timing/teardown.py's policy, CUDASMITH_CUPTI_TEARDOWN; by default every stop tears down), and
# a stop that tore down waits until the teardown has ended. On an H100 (2026-12-07, gpu_session.py) the
# whole GPU suite passed under it, 64 of 64, the two race cheats rejected for their rule, so it is on by
# default. It costs time: the suite took 976 s against 714 s with the switch off (the same 64 tests, hours
# apart), 2 to 5 s more per evaluation; most likely the start of each recording, which attaches CUPTI again
# after a teardown (benchmarks/stream_records.py prints each start's and stop's time; not yet run there).
CUPTI_ACTIVITY_KIND_CUDA_EVENT = 36
SWITCH_EVENT_RECORDS = os.environ.get("CUDASMITH_CUDA_EVENT_RECORDS", "1") == "1"
if SWITCH_EVENT_RECORDS:
    teardowns.configure(os.environ.get("CUDASMITH_CUPTI_TEARDOWN", "every"))


class _EventRecords:
    """CUPTI's switch for the records of CUDA events, in the libcupti this process already loaded (the
    profiler's), bound at the first recording, which every worker makes before any solution loads."""

    def __init__(self) -> None:
        self._enable: Any = None
        self._disable: Any = None
        self._bound = False

    def _bind(self) -> None:
        self._bound = True
        import ctypes

        try:
            with open("/proc/self/maps") as maps:
                paths = {line.split()[-1] for line in maps if "/libcupti.so" in line}
        except OSError:
            return
        for path in sorted(paths):
            try:
                library = ctypes.CDLL(path)
                self._enable, self._disable = library.cuptiActivityEnable, library.cuptiActivityDisable
            except (OSError, AttributeError):
                continue
            self._enable.argtypes = self._disable.argtypes = [ctypes.c_int]
            self._enable.restype = self._disable.restype = ctypes.c_int
            return

    def on(self) -> bool:
        """Switch the records on; whether CUPTI took it."""
        if not self._bound:
            self._bind()
        return self._enable is not None and self._enable(CUPTI_ACTIVITY_KIND_CUDA_EVENT) == 0

    def off(self) -> None:
        if self._disable is not None:
            self._disable(CUPTI_ACTIVITY_KIND_CUDA_EVENT)


_event_records = _EventRecords()


class RecordingLost(Exception):
    """The judge's recording did not span the whole window: switched off, or restarted, in between."""


def _every_thread_config(synchronisations: bool = False) -> Any:
    """Kineto's option to record operators on every thread (torch 2.7 on), or None where torch lacks it;
    `synchronisations`: with the GPU's synchronisations and their fields too (races/streams.py), where
    torch can."""
    config = torch._C._profiler._ExperimentalConfig
    if synchronisations:
        try:
            return config(
                profile_all_threads=True, enable_cuda_sync_events=True, expose_kineto_event_metadata=True
            )
        except (TypeError, AttributeError):
            pass
    try:
        return config(profile_all_threads=True)
    except (TypeError, AttributeError):
        return None


# Whether operators on threads other than the caller's are recorded. Where they are not, candidate code
# may start no thread at all (audit.py), so that no operator runs where the recorder does not look.
EVERY_THREAD = _every_thread_config() is not None
# The profiler's modules, held before any solution loads. Its switches are looked up when a recording
# starts, which is always after a tamper check (tamper.py watches these namespaces).
_autograd = torch._C._autograd
_profiler = torch._C._profiler


def _profiler_config(gpu: bool) -> Any:
    profiler = _profiler
    experimental = _every_thread_config(synchronisations=gpu) or profiler._ExperimentalConfig()
    fields = (profiler.ProfilerState.KINETO, False, False, False, False, False, experimental)
    try:
        return profiler.ProfilerConfig(*fields, "")
    except TypeError:  # torch from before the trace id
        return profiler.ProfilerConfig(*fields)


class Observation:
    """The profiler recording operators on every thread, and on a GPU every kernel, copy and memset,
    between start and stop."""

    def __init__(self, gpu: bool) -> None:
        self.gpu = gpu
        self._disable: Any = None
        self._opening = self._closing = ""
        self._events = False  # CUPTI's records of CUDA events switched on for this recording

    def start(self) -> None:
        autograd, profiler = _autograd, _profiler
        activities = {profiler.ProfilerActivity.CPU}
        if self.gpu:
            activities.add(profiler.ProfilerActivity.CUDA)
        config = _profiler_config(self.gpu)
        autograd._prepare_profiler(config, activities)
        self._disable = autograd._disable_profiler  # the stop calls what the start saw
        autograd._enable_profiler(config, activities)
        self._events = self.gpu and SWITCH_EVENT_RECORDS and _event_records.on()
        seed = clock.fresh_seed()
        self._opening, self._closing = f"cudasmith-open-{seed:x}", f"cudasmith-close-{seed:x}"
        with clock.RecordFunctionFast(self._opening):
            pass

    def stop(self) -> tuple[list[CpuEvent], list[Activity], int, list[StreamOp]]:
        """Operators, GPU work, how many CUDA graphs were launched, and the GPU's synchronisations;
        RecordingLost when the recording was not whole."""
        with clock.RecordFunctionFast(self._closing):
            pass
        if self.gpu:
            clock.cuda_synchronize()
        if self._events:
            # Before Kineto stops: its stop flushes what CUPTI holds, the records of the window among them.
            _event_records.off()
        # Kineto's teardown of CUPTI, where the policy has this stop make one, ends before anything else runs.
        results = teardowns.stop(self._disable, self._events, clock.cuda_synchronize if self.gpu else None)
        events = list(result_events(results)) if results is not None else []
        cpu, gpu, syncs = split_events(events, clock.CUDA_DEVICE_TYPE)
        seen = {event.name for event in cpu}
        if self._opening not in seen or self._closing not in seen:
            raise RecordingLost("the judge's recording was switched off or restarted in the middle")
        cpu = [event for event in cpu if event.name not in (self._opening, self._closing)]
        graphs = sum(1 for event in events if "GraphLaunch" in event_name(event))
        return cpu, gpu, graphs, syncs
