"""GPU work on every stream, from CUPTI activity records collected through PyTorch's profiler (Kineto).

CUPTI records each kernel, copy and memset with its start and end on the GPU, whatever stream or thread
launched it, so work a candidate hides on a side stream is seen, and a kernel's own duration is read
without the launch and event overheads that CUDA events around a call include.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass

from cudasmith.timing import clock

# Kineto activity kinds on the GPU timeline that are not work (waits, annotations, bookkeeping).
NOT_WORK_KINDS = frozenset({"cuda_sync", "gpu_user_annotation", "cuda_profiler_range", "overhead"})


@dataclass(frozen=True)
class Activity:
    """One piece of GPU work: what it was and when it ran (GPU timestamps, in nanoseconds)."""

    name: str
    start_ns: int
    end_ns: int


def _is_work(event: object) -> bool:
    kind = event.activity_type() if hasattr(event, "activity_type") else ""  # type: ignore[attr-defined]
    return kind not in NOT_WORK_KINDS and "sync" not in event.name().lower()  # type: ignore[attr-defined]


class ActivityRecorder:
    """Records the GPU work of this process from `start()` to `stop()`."""

    def __init__(self) -> None:
        self._profile = clock.Profile(use_cpu=False, use_device="cuda", use_kineto=True)
        self._profile.__enter__()

    def stop(self) -> list[Activity]:
        """End the recording; the work seen, in no particular order."""
        self._profile.__exit__(None, None, None)
        results = self._profile.kineto_results
        if results is None:
            raise RuntimeError("the profiler returned no results")
        return [
            Activity(event.name(), event.start_ns(), event.start_ns() + event.duration_ns())
            for event in results.events()
            if event.device_type() == clock.CUDA_DEVICE_TYPE and _is_work(event)
        ]


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
    ordered = sorted(activities, key=lambda a: a.start_ns)
    openings = [a.start_ns for a in ordered if a.name == opening]
    closings: list[int | None] = [None] * len(openings)
    for activity in ordered:
        if activity.name == closing:
            sample = bisect.bisect_right(openings, activity.start_ns) - 1
            if sample >= 0 and closings[sample] is None:
                closings[sample] = activity.start_ns
    harness = {opening, *ours, *([closing] if closing else [])}
    first: list[int | None] = [None] * len(openings)
    last: list[int | None] = [None] * len(openings)
    for activity in ordered:
        if activity.name in harness:
            continue
        sample = bisect.bisect_right(openings, activity.start_ns) - 1
        if sample < 0:
            continue
        if closings[sample] is not None and activity.start_ns >= closings[sample]:  # type: ignore[operator]
            continue
        start, end = first[sample], last[sample]
        first[sample] = activity.start_ns if start is None else min(start, activity.start_ns)
        last[sample] = activity.end_ns if end is None else max(end, activity.end_ns)
    return [
        None if start is None or end is None else (end - start) / 1e6
        for start, end in zip(first, last, strict=True)
    ]
