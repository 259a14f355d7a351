"""CUPTI spans of timed calls, read a chunk of samples at a time, so that the stop rule judges the time
that is reported.

The profiler hands over its records only when it stops. So the sampler records in chunks: at each
checkpoint (the stop rule's minimums met, then each time the samples have grown by CHECK_GROWTH) it
stops the recorder, gives each sample of the chunk its GPU work (activity.work_between) and starts a new
recorder. The rule then reads the noise of the spans, 0.03 % on a 3 µs kernel on an H100, where the
CUDA-event times of the same calls spread by 8 % and met the noise target only at the sample cap. One
checkpoint usually ends the sampling, so a checkpoint costs what reading the records at the end did.

Samples are told apart as activity.spans_between explains: each begins with its opening kernel (the L2
flush, or the blocker when the L2 stays hot) and ends at the harness's closing kernel.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from typing import Any

from cudasmith.timing.activity import Activity, ActivityRecorder, span_ms, work_between
from cudasmith.timing.protocol import WorkTotal

# After a checkpoint whose spans were still too noisy, the next comes once the samples have grown by this
# factor (and by the plan's minimum count): at most a handful of checkpoints up to the sample cap.
CHECK_GROWTH = 1.5
# When most calls show no GPU work in CUPTI's records but their CUDA-event time is at least this, CUPTI
# missed the work (it cannot see some graph launches everywhere) and the event times are used.
CUPTI_BLIND_EVENT_MS = 0.01


def with_launch_cost(spans_ms: list[float], launch_ms: float) -> list[float]:
    """CUPTI spans plus the launch cost, once per call; a call with no GPU work stays at zero."""
    return [span + launch_ms if span > 0 else 0.0 for span in spans_ms]


class SpanLog:
    """The GPU work of each sample, from CUPTI records collected a chunk at a time.

    `open(taken)` starts a recorder before sample number `taken`; `close(taken)` stops it once `taken`
    samples exist and gives each sample of the chunk its work. Once records are lost (CUPTI missing, a
    sample unseen), `lost` says why and the caller's CUDA-event times stand in for the spans.
    """

    def __init__(
        self,
        opening: str,
        ours: tuple[str, ...],
        closing: str,
        sync: Callable[[], None],
        recorder: Callable[[], Any] | None = None,
    ) -> None:
        """`opening`, `ours`, `closing`: the harness's kernel names (see activity.work_between); `sync`
        waits for the whole device; `recorder` starts a recording (default: an ActivityRecorder)."""
        self.opening, self.ours, self.closing = opening, ours, closing
        self.work: list[list[Activity]] = []
        self.lost: str | None = None
        self._sync = sync
        self._make_recorder = recorder or ActivityRecorder
        self._recorder: Any = None
        self._first = 0
        self._next_check = 0

    @property
    def recording(self) -> bool:
        return self._recorder is not None

    def open(self, taken: int) -> None:
        """Start recording before sample number `taken`."""
        self._first = taken
        try:
            self._recorder = self._make_recorder()
        except Exception as exc:  # no CUPTI (or no profiler): probing the environment
            self.lost = self.lost or (
                f"CUPTI unavailable ({type(exc).__name__}: {str(exc)[:160]}): CUDA-event times used"
            )

    def close(self, taken: int) -> None:
        """Stop recording after `taken` samples in all; the chunk's samples get their work."""
        recorder, self._recorder = self._recorder, None
        if recorder is None:
            return
        self._sync()  # the last sample's closing kernel and whatever followed it are in the records
        try:
            activities = recorder.stop()
        except Exception as exc:
            self.lost = self.lost or f"CUPTI records lost ({type(exc).__name__}: {str(exc)[:160]})"
            return
        if self.lost is not None:
            return
        work = work_between(activities, self.opening, self.ours, closing=self.closing)
        if len(work) != taken - self._first:
            seen = len(self.work) + len(work)
            self.lost = f"CUPTI saw {seen} samples of {taken}: CUDA-event times used (work on other streams not counted)"
            return
        self.work += work

    def due(self, count: int) -> bool:
        """Whether `count` samples call for a checkpoint."""
        return self.recording and count >= self._next_check

    def checked(self, count: int, min_samples: int) -> None:
        """A checkpoint was made at `count` samples: the next waits for CHECK_GROWTH times as many."""
        self._next_check = max(math.ceil(count * CHECK_GROWTH), count + min_samples)

    def spans(
        self,
        kept: list[bool],
        event_ms: list[float],
        warnings: list[str],
        work_seen: dict[str, WorkTotal],
    ) -> list[float] | None:
        """The kept samples' CUPTI spans (0 for a call with no GPU work), or None (with a warning) when the
        CUDA-event times must stand in. `kept` covers every sample taken, `event_ms` the kept ones;
        `work_seen` receives what ran in the kept samples, per name: its kind, total nanoseconds, count."""
        if self.lost is not None:
            warnings.append(self.lost)
            return None
        kept_work = [items for items, keep in zip(self.work, kept, strict=True) if keep]
        for items in kept_work:
            for activity in items:
                entry = work_seen.setdefault(activity.name, WorkTotal(activity.kind))
                entry.ns += activity.duration_ns
                entry.calls += 1
        spans = [span_ms(items) for items in kept_work]
        empty = [event for span, event in zip(spans, event_ms, strict=True) if span is None]
        if empty and len(empty) * 2 > len(spans) and statistics.median(empty) >= CUPTI_BLIND_EVENT_MS:
            warnings.append(
                f"CUPTI saw no GPU work in {len(empty)} of {len(spans)} calls that took "
                f"{statistics.median(empty) * 1e3:.1f} µs by CUDA events: CUDA-event times used"
            )
            return None
        if empty:
            warnings.append(f"no GPU work at all in {len(empty)} of {len(spans)} timed calls")
        return [0.0 if span is None else span for span in spans]
