"""GPU work on every stream, from CUPTI activity records collected through PyTorch's profiler (Kineto).

CUPTI records each kernel, copy and memset with its start and end on the GPU, whatever stream or thread
launched it, so work a candidate hides on a side stream is seen, and a kernel's own duration is read
without the launch and event overheads that CUDA events around a call include.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import NamedTuple

import torch

from cudasmith.timing import clock
from cudasmith.timing.teardown import teardowns

# Kineto activity kinds on the GPU timeline that are not work (waits, annotations, bookkeeping).
NOT_WORK_KINDS = frozenset(
    {"cuda_sync", "cuda_event", "gpu_user_annotation", "cuda_profiler_range", "overhead"}
)
# CUPTI's kinds of synchronisation, as Kineto names its records: never work, whatever activity type a torch
# gives them (the happens-before graph, harness/workers/races/streams.py, reads them).
STREAM_WAIT = "Stream Wait Event"
EVENT_SYNC = "Event Sync"
STREAM_SYNC = "Stream Sync"
CONTEXT_SYNC = "Context Sync"
SYNC_NAMES = frozenset({STREAM_WAIT, EVENT_SYNC, STREAM_SYNC, CONTEXT_SYNC})
# CUPTI's record of a CUDA event being recorded on a stream, as Kineto names it: not work either.
EVENT_RECORD = "cudaEvent"
# What reads a Kineto record, captured before any solution loads. They are methods of pybind11 classes,
# which Python code may patch: the judge calls these objects, never what the class holds later, so a
# candidate's replacement neither changes what the judge reads nor runs when the judge reads it.
_KinetoEvent = torch._C._autograd._KinetoEvent
event_name = _KinetoEvent.name
event_start_ns = _KinetoEvent.start_ns
event_duration_ns = _KinetoEvent.duration_ns
event_device_type = _KinetoEvent.device_type
event_thread = _KinetoEvent.start_thread_id
# For GPU records, the stream; for every record, CUPTI's correlation id (the order the host issued it in);
# and a record's own fields, where the profiler exposes them (a synchronisation's event and its stream).
event_stream = _KinetoEvent.device_resource_id
event_correlation = _KinetoEvent.correlation_id
event_metadata = getattr(_KinetoEvent, "metadata_json", None)
_event_activity_type = getattr(_KinetoEvent, "activity_type", None)
result_events = torch._C._autograd._ProfilerResult.events


class Activity(NamedTuple):
    """One piece of GPU work: what it was and when it ran (GPU timestamps, in nanoseconds); `kind` is
    Kineto's activity type ('kernel', 'gpu_memcpy', 'gpu_memset', …). A tuple: a timed config reads
    thousands of them at each checkpoint."""

    name: str
    start_ns: int
    end_ns: int
    kind: str = "kernel"
    # The stream it ran on and the correlation id of the call that issued it (-1: not read).
    stream: int = -1
    correlation: int = -1

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


def _kind_by_name(name: str) -> str:
    """The activity type of GPU work on torch that lacks the method, from the names Kineto gives."""
    return (
        "gpu_memcpy" if name.startswith("Memcpy") else "gpu_memset" if name.startswith("Memset") else "kernel"
    )


def activity_kind(event: _KinetoEvent) -> str:
    """Kineto's activity type ('kernel', 'gpu_memcpy', 'cpu_op', …); older torch lacks the method, and
    then GPU work is told apart by the names Kineto gives copies and memsets."""
    if _event_activity_type is not None:
        return str(_event_activity_type(event))
    if event_device_type(event) != clock.CUDA_DEVICE_TYPE:
        return "cpu_event"
    return _kind_by_name(event_name(event))


def gpu_work(events: Iterable[_KinetoEvent]) -> list[Activity]:
    """The work among Kineto's events: what ran on the GPU, less waits, annotations, bookkeeping and
    synchronisations. Each accessor is called once per event, and only the device type for the host's
    events (the runtime calls, most of the records): a timed config reads thousands at each checkpoint."""
    cuda, kind_of = clock.CUDA_DEVICE_TYPE, _event_activity_type
    found = []
    for event in events:
        if event_device_type(event) != cuda:
            continue
        name = event_name(event)
        kind = str(kind_of(event)) if kind_of is not None else _kind_by_name(name)
        if kind in NOT_WORK_KINDS or "sync" in name.lower() or name in SYNC_NAMES or name == EVENT_RECORD:
            continue
        start = event_start_ns(event)
        found.append(Activity(name, start, start + event_duration_ns(event), kind))
    return found


class ActivityRecorder:
    """Records the GPU work of this process from `start()` to `stop()`."""

    def __init__(self) -> None:
        self._profile = clock.Profile(use_cpu=False, use_device="cuda", use_kineto=True)
        self._profile.__enter__()

    def stop(self) -> list[Activity]:
        """End the recording; the work seen, in no particular order."""
        teardowns.stop(lambda: self._profile.__exit__(None, None, None), False, clock.cuda_synchronize)
        results = self._profile.kineto_results
        if results is None:
            raise RuntimeError("the profiler returned no results")
        return gpu_work(result_events(results))


def work_between(
    activities: Iterable[Activity], opening: str, ours: Iterable[str], closing: str | None = None
) -> list[list[Activity]]:
    """Per sample, the GPU work in it (see spans_between for how samples are delimited)."""
    ordered = sorted(activities, key=lambda a: a.start_ns)
    openings = [a.start_ns for a in ordered if a.name == opening]
    closings: list[int | None] = [None] * len(openings)
    for activity in ordered:
        if activity.name == closing:
            sample = bisect.bisect_right(openings, activity.start_ns) - 1
            if sample >= 0 and closings[sample] is None:
                closings[sample] = activity.start_ns
    harness = {opening, *ours, *([closing] if closing else [])}
    work: list[list[Activity]] = [[] for _ in openings]
    for activity in ordered:
        if activity.name in harness:
            continue
        sample = bisect.bisect_right(openings, activity.start_ns) - 1
        if sample < 0:
            continue
        end = closings[sample]
        if end is not None and activity.start_ns >= end:
            continue
        work[sample].append(activity)
    return work


def span_ms(work: list[Activity]) -> float | None:
    """From the first start to the last end of some GPU work, in milliseconds; None when there is none."""
    if not work:
        return None
    return (max(a.end_ns for a in work) - min(a.start_ns for a in work)) / 1e6


def spans_between(
    activities: Iterable[Activity], opening: str, ours: Iterable[str], closing: str | None = None
) -> list[float | None]:
    """Per sample, the span in milliseconds from the first start to the last end of the work in it.

    Samples are separated by device-wide synchronisations and each begins with one kernel named
    `opening`, so a sample's work is everything that starts between its opening kernel and the next,
    or its `closing` kernel where one is launched (after the synchronisation: what follows it, such as
    the caller preparing the next call's inputs, is not the call's work). Kernels named in `ours` (the
    harness's own) are not work of the call. None marks a sample in which the call did no GPU work.
    """
    return [span_ms(work) for work in work_between(activities, opening, ours, closing)]
