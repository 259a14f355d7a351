"""The figures of a stream row beyond its rate (throughput_stream.py): the steady state, the bound, where the
row's wall time went, and where a config's timing went.

- Steady state: the rate over the verdicts given after every task had its first one (each task's first
  candidate pays for its session's start), over the time from that moment to the row's last verdict.
- The bound: the exclusive device time the row's judging needed (every timed request of its holds: the
  candidates' windows, screens included, the baselines' and the peaks'; harness/lease.py's tally), against
  the row's wall time. Its rate is what a GPU that did nothing but those windows back to back would judge;
  the share of the bound reached is the exclusive time over the wall time.
- Wall time: each instant of the row counted once, as the first of these that was going on: a hold (the
  device held alone), a candidate's correctness rounds (Triton's compile on the first call included),
  its import (NVRTC builds at import included), else the start (before the first candidate's import: the
  child's interpreter and imports, its sessions' workers starting) or idle.
- A config's timing: per timed config, the judge's side (its request from sending to answer, the window's
  checks for other processes, the re-check of its timed outputs) and the worker's (making the input sets,
  warm-up, sampling, reading CUPTI's records, its checks, exporting the kept outputs), medians over the row.
"""

from __future__ import annotations

import itertools
import statistics
from dataclasses import dataclass, field
from typing import Any

# Wall-time categories, first wins where several go on at once; "start" and "idle" are what none covers.
CATEGORIES = ("holds", "correctness", "imports")
WALL_COLUMNS = ("start", "imports", "correctness", "holds", "idle")
# A config's timing: the judge's side, then the worker's (Timing.phases_s keys).
JUDGE_SIDE = ("request", "watch", "probe", "recheck")
WORKER_SIDE = ("inputs", "warmup", "sampling", "records", "audit", "export")


@dataclass
class Steady:
    """The rate over the verdicts after every task's first, and the window it is over."""

    judged: int
    window_s: float
    per_minute: float | None


def steady_state(done_at: dict[str, float], task_of: dict[str, str]) -> Steady:
    """`done_at`: each judged candidate's verdict time (seconds on the row's clock); `task_of`: its task."""
    firsts: dict[str, float] = {}
    for name, at in done_at.items():
        task = task_of[name]
        firsts[task] = min(at, firsts.get(task, at))
    if not firsts:
        return Steady(0, 0.0, None)
    begin = max(firsts.values())
    later = [at for at in done_at.values() if at > begin]
    window = (max(later) - begin) if later else 0.0
    return Steady(len(later), window, len(later) / (window / 60) if later and window > 0 else None)


@dataclass
class Bound:
    """The row's exclusive device time against its wall time, as a rate and as a share."""

    exclusive_s: float
    wall_s: float
    judged: int

    @property
    def per_minute(self) -> float | None:
        """Candidates a GPU would judge a minute doing nothing but the row's timed requests."""
        return self.judged / (self.exclusive_s / 60) if self.exclusive_s > 0 and self.judged else None

    @property
    def share(self) -> float | None:
        """The share of the bound the row reached: its rate over the bound's, exclusive over wall time."""
        return self.exclusive_s / self.wall_s if self.wall_s > 0 else None


@dataclass
class Timeline:
    """What went on when, on the row's clock (seconds since its start): intervals per category."""

    wall_s: float
    intervals: dict[str, list[tuple[float, float]]] = field(
        default_factory=lambda: {c: [] for c in CATEGORIES}
    )
    first_work_s: float | None = None

    def add(self, category: str, begin: float, end: float) -> None:
        if end > begin:
            self.intervals[category].append((begin, end))
            if category == "imports":
                self.first_work_s = begin if self.first_work_s is None else min(self.first_work_s, begin)


def candidate_intervals(
    timeline: Timeline,
    lines: list[tuple[float, str]],
    offset: float,
    done: float | None,
    hold: tuple[float, float] | None,
) -> None:
    """A candidate's import (from "loading the solution" to its first check), its correctness rounds (to its
    hold, or to its verdict) and its hold, from its progress lines (phases clock, `offset` to the row's)."""
    if not lines:
        return
    loading = lines[0][0] + offset
    checks = [t + offset for t, what in lines if what.startswith("checking")]
    end = (done + offset) if done is not None else lines[-1][0] + offset
    checking = checks[0] if checks else end
    timeline.add("imports", loading, checking)
    timeline.add("correctness", checking, (hold[0] + offset) if hold else end)
    if hold is not None:
        timeline.add("holds", hold[0] + offset, hold[1] + offset)


def wall_breakdown(timeline: Timeline) -> dict[str, float]:
    """Seconds per WALL_COLUMNS: each instant counted once, in the first category going on then."""
    edges = sorted(
        {0.0, timeline.wall_s, *(t for spans in timeline.intervals.values() for s in spans for t in s)}
    )
    found = dict.fromkeys(WALL_COLUMNS, 0.0)
    for begin, end in itertools.pairwise(edges):
        if end <= 0 or begin >= timeline.wall_s:
            continue
        middle = (begin + end) / 2
        category = next(
            (c for c in CATEGORIES if any(b <= middle < e for b, e in timeline.intervals[c])), None
        )
        if category is None:
            before = timeline.first_work_s is None or middle < timeline.first_work_s
            category = "start" if before else "idle"
        found[category] += min(end, timeline.wall_s) - max(begin, 0.0)
    return {key: round(value, 3) for key, value in found.items()}


def config_parts(configs: list[dict[str, Any]]) -> dict[str, float | None]:
    """Per part of a config's timing (JUDGE_SIDE, then WORKER_SIDE), its median over the timed configs."""
    found: dict[str, float | None] = {}
    for key in (*JUDGE_SIDE, *WORKER_SIDE):
        values = [c[f"{key}_s"] for c in configs if c.get(f"{key}_s") is not None]
        found[key] = statistics.median(values) if values else None
    return found


def hold_parts(timings: list[dict[str, Any]]) -> dict[str, float | None]:
    """Per candidate hold, the medians of what it waited for and where its time went (TimingReport's sums)."""
    keys = (
        "drain_s",
        "pause_s",
        "settle_s",
        "held_s",
        "requests_s",
        "watch_s",
        "probe_s",
        "recheck_s",
        "finish_s",
        "release_s",
    )
    found: dict[str, float | None] = {}
    for key in keys:
        values = [t[key] for t in timings if t.get(key) is not None and t.get("held_s")]
        found[key] = statistics.median(values) if values else None
    return found


def fmt(value: float | None, spec: str = ".2f", unit: str = "") -> str:
    return "–" if value is None else format(value, spec) + unit


def config_line(parts: dict[str, float | None], holds: dict[str, float | None], timed: int) -> str:
    """Where a config's timing went, as one line (medians over the row's `timed` configs)."""
    judge = ", ".join(f"{key} {fmt(parts[key], '.3f', ' s')}" for key in JUDGE_SIDE)
    worker = ", ".join(f"{key} {fmt(parts[key], '.3f', ' s')}" for key in WORKER_SIDE)
    hold = ", ".join(f"{key[:-2]} {fmt(holds[key], '.3f', ' s')}" for key in holds)
    return (
        f"a config's timing, medians over {timed} timed configs: the judge's side {judge}; the worker's "
        f"request {worker}; per candidate's hold: {hold}"
    )
