"""The executor: candidates in, verdicts out, over several lanes (one judge session per GPU) at once.

    with LocalExecutor(["cuda:0", "cuda:1"]) as executor:
        futures = [executor.submit(job) for job in jobs]      # or: await executor.judge(job)

A candidate first goes to the build pool when its import compiles something (see prebuild.py), then
waits as ready. Each lane has `in_flight` threads, each taking the next ready candidate (one of the
problem whose session the lane has open first, else the oldest) and judging it on the lane's backend: an
in-process `Lane` for the local executor, a Ray actor for the Ray executor. A lane's session judges its
candidates in flight at once, each timed alone (harness/lease.py). The scheduling, the queue and the
statistics are the same for both; only where the lanes and builds run differs.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Protocol

from cudasmith.exec.jobs import Job
from cudasmith.exec.prebuild import BuildResult, needs_build
from cudasmith.harness.verdict import Verdict
from cudasmith.jsontypes import JsonDict, JsonObject
from cudasmith.wording import plural


class Backend(Protocol):
    """Where one lane's candidates are judged."""

    name: str

    def judge(self, job: Job) -> Verdict: ...

    def counters(self) -> dict[str, int]: ...

    def close_idle(self, idle_s: float) -> int: ...

    def close(self) -> None: ...


# How long close() waits for the lanes' threads to finish the candidates they are judging.
LANE_STOP_S = 2.0

# Builds one candidate ahead (on this machine's CPUs, or as a Ray task).
Builder = Callable[[Job], BuildResult]


@dataclass
class LaneStats:
    """What one lane did: candidates judged, seconds with at least one being judged, sessions opened,
    restarts, and how many it is judging now."""

    name: str
    judged: int = 0
    busy_s: float = 0.0
    sessions: int = 0
    restarts: int = 0
    judging: int = 0


@dataclass
class ExecutorStats:
    """The executor's state: its lanes, its queue and its builds; fractions are of the wall time since
    the first candidate came (a lane is busy while it judges a candidate)."""

    kind: str
    lanes: list[LaneStats]
    wall_s: float
    building: int
    waiting_for_build: int
    ready: int
    max_ready: int
    built: int = 0
    build_failed: int = 0
    build_s: float = 0.0
    gpu_utilization: dict[str, float] = field(default_factory=dict)

    @property
    def busy_fraction(self) -> float | None:
        """The lanes' mean share of the wall time spent judging."""
        if self.wall_s <= 0 or not self.lanes:
            return None
        return sum(min(lane.busy_s / self.wall_s, 1.0) for lane in self.lanes) / len(self.lanes)

    def to_dict(self) -> JsonDict:
        """The JSON form, as a run's summary keeps it: times rounded to the millisecond, and the busy shares
        of those rounded times (so that from_dict and to_dict again give the same)."""
        rounded = replace(
            self,
            wall_s=round(self.wall_s, 3),
            lanes=[replace(lane, busy_s=round(lane.busy_s, 3)) for lane in self.lanes],
            build_s=round(self.build_s, 3),
        )
        busy = rounded.busy_fraction
        return {
            "kind": self.kind,
            "wall_s": rounded.wall_s,
            "busy_fraction": None if busy is None else round(busy, 4),
            "lanes": [
                {
                    **vars(lane),
                    "busy_fraction": None
                    if (share := rounded.lane_busy_fraction(lane)) is None
                    else round(share, 4),
                }
                for lane in rounded.lanes
            ],
            "queue": {
                "building": self.building,
                "waiting_for_build": self.waiting_for_build,
                "ready": self.ready,
                "max_ready": self.max_ready,
            },
            "builds": {"built": self.built, "failed": self.build_failed, "seconds": rounded.build_s},
            "gpu_utilization": {k: round(v, 4) for k, v in self.gpu_utilization.items()},
        }

    @classmethod
    def from_dict(cls, data: JsonObject) -> ExecutorStats:
        """From the JSON form (a run's stored summary)."""
        queue, builds = data.get("queue") or {}, data.get("builds") or {}
        lanes = [
            LaneStats(**{k: v for k, v in lane.items() if k != "busy_fraction"}) for lane in data["lanes"]
        ]
        return cls(
            kind=data["kind"],
            lanes=lanes,
            wall_s=data["wall_s"],
            building=queue.get("building", 0),
            waiting_for_build=queue.get("waiting_for_build", 0),
            ready=queue.get("ready", 0),
            max_ready=queue.get("max_ready", 0),
            built=builds.get("built", 0),
            build_failed=builds.get("failed", 0),
            build_s=builds.get("seconds", 0.0),
            gpu_utilization=dict(data.get("gpu_utilization") or {}),
        )

    def lane_busy_fraction(self, lane: LaneStats) -> float | None:
        """A lane's share of the wall time spent judging."""
        return lane.busy_s / self.wall_s if self.wall_s > 0 else None


def describe_executor(stats: ExecutorStats) -> str:
    """One line on an executor's lanes, queue and builds."""
    lanes = ", ".join(
        lane.name if (share := stats.lane_busy_fraction(lane)) is None else f"{lane.name} {share:.0%}"
        for lane in stats.lanes
    )
    busy = stats.busy_fraction
    text = f"{stats.kind}, {plural(len(stats.lanes), 'lane')} busy {'–' if busy is None else f'{busy:.0%}'} ({lanes})"
    if stats.gpu_utilization:
        used = ", ".join(f"{name} {value:.0%}" for name, value in stats.gpu_utilization.items())
        text += f" · NVML utilization {used}"
    text += f" · ready {stats.ready} (at most {stats.max_ready}), building {stats.building}"
    if stats.built or stats.build_failed:
        text += f" · built ahead {stats.built} ({stats.build_failed} failed, {stats.build_s:.1f} s)"
    return text


@dataclass
class _Entry:
    job: Job
    future: Future[Verdict]
    ready: bool


def _source_key(job: Job) -> str:
    return hashlib.sha256(job.source.encode()).hexdigest()


class Executor:
    """Judges submitted candidates on its lanes; a context manager (close() stops lanes and builds)."""

    kind = "executor"

    def __init__(
        self,
        backends: Sequence[Backend],
        builder: Builder | None = None,
        build_workers: int = 0,
        in_flight: int = 1,
    ) -> None:
        """`in_flight`: candidates each lane judges at once (its backend must take that many calls at once)."""
        if not backends:
            raise ValueError("an executor needs at least one lane")
        self.backends = backends
        self.in_flight = max(1, in_flight)
        self._builder = builder if build_workers > 0 else None
        self._builds = ThreadPoolExecutor(build_workers, "cudasmith-build") if self._builder else None
        self._lock = threading.Condition()
        self._entries: list[_Entry] = []
        self._closed = False
        self._first_job: float | None = None
        self._handed_out = 0  # candidates handed to lanes so far
        self._max_ready = 0
        self._build_counts = {"built": 0, "failed": 0}
        self._build_s = 0.0
        self._builds_done: dict[str, bool] = {}  # by source: finished (True) or under way (False)
        self._lanes = [LaneStats(backend.name) for backend in backends]
        self._open_keys: list[tuple[str, str] | None] = [None] * len(backends)
        self._judging_since: list[float | None] = [None] * len(backends)
        self._threads = [
            threading.Thread(target=self._serve, args=(i,), name=f"cudasmith-lane-{i}-{k}", daemon=True)
            for i in range(len(backends))
            for k in range(self.in_flight)
        ]
        for thread in self._threads:
            thread.start()

    @property
    def slots(self) -> int:
        """How many candidates are judged at once: `in_flight` per lane."""
        return len(self.backends) * self.in_flight

    def prebuild(self, job: Job) -> None:
        """Start building a candidate ahead (when its import compiles something), before it is submitted:
        a search does this as soon as a candidate is queued, whatever order it is judged in."""
        with self._lock:
            self._start_build(job)

    def _start_build(self, job: Job) -> bool:
        """Start the candidate's build unless it is under way or done; whether it is still under way."""
        if self._builds is None or not needs_build(job.source):
            return False
        key = _source_key(job)
        if key not in self._builds_done:
            self._builds_done[key] = False
            self._first_job = self._first_job or time.monotonic()
            self._builds.submit(self._build, job, key)
        return not self._builds_done[key]

    def submit(self, job: Job) -> Future[Verdict]:
        """Queue a candidate; its future holds the verdict (or the judge's own failure). It waits for its
        build, if one is under way; lanes take it once ready."""
        future: Future[Verdict] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the executor is closed")
            self._first_job = self._first_job or time.monotonic()
            self._entries.append(_Entry(job, future, ready=not self._start_build(job)))
            self._note_ready()
            self._lock.notify_all()
        return future

    async def judge(self, job: Job) -> Verdict:
        """The candidate's verdict, awaited."""
        return await asyncio.wrap_future(self.submit(job))

    def _build(self, job: Job, key: str) -> None:
        assert self._builder is not None
        try:
            result = self._builder(job)
        except Exception as exc:  # a build is only ever a head start: the judged worker builds itself
            result = BuildResult(False, 0.0, f"{type(exc).__name__}: {exc}")
        with self._lock:
            self._build_counts["built" if result.ok else "failed"] += 1
            self._build_s += result.seconds
            self._builds_done[key] = True
            for entry in self._entries:
                entry.ready = entry.ready or _source_key(entry.job) == key
            self._note_ready()
            self._lock.notify_all()

    def _note_ready(self) -> None:
        self._max_ready = max(self._max_ready, sum(e.ready for e in self._entries))

    def _take(self, lane: int) -> _Entry | None:
        """The next candidate for this lane, oldest first among: those of its open session; those of a
        session no other lane has open (so lanes spread over a bench's tasks); any ready one."""
        with self._lock:
            while not self._closed:
                ready = [e for e in self._entries if e.ready]
                if ready:
                    elsewhere = {key for i, key in enumerate(self._open_keys) if i != lane}
                    same = [e for e in ready if e.job.session_key == self._open_keys[lane]]
                    fresh = [e for e in ready if e.job.session_key not in elsewhere]
                    entry = (same or fresh or ready)[0]
                    self._entries.remove(entry)
                    alike = sum(e.job.session_key == entry.job.session_key for e in self._entries)
                    self._handed_out += 1
                    entry.job = replace(entry.job, queued_alike=alike, handed_out=self._handed_out)
                    self._open_keys[lane] = entry.job.session_key
                    self._start_judging(lane)
                    return entry
                self._lock.wait()
            return None

    def _start_judging(self, lane: int) -> None:
        """One more candidate on the lane (the caller holds the lock): busy from the first."""
        stats = self._lanes[lane]
        if stats.judging == 0:
            self._judging_since[lane] = time.monotonic()
        stats.judging += 1

    def _stop_judging(self, lane: int) -> None:
        """One candidate fewer on the lane (the caller holds the lock): idle after the last."""
        stats = self._lanes[lane]
        stats.judging -= 1
        since = self._judging_since[lane]
        if stats.judging == 0 and since is not None:
            stats.busy_s += time.monotonic() - since
            self._judging_since[lane] = None

    def _serve(self, lane: int) -> None:
        backend, stats = self.backends[lane], self._lanes[lane]
        while (entry := self._take(lane)) is not None:
            if not entry.future.set_running_or_notify_cancel():
                with self._lock:
                    self._stop_judging(lane)
                continue
            try:
                verdict = backend.judge(entry.job)
            except BaseException as exc:  # the judge's own failure, told to whoever waits
                entry.future.set_exception(exc)
            else:
                with self._lock:
                    stats.judged += 1  # before whoever waits hears of it, so the counts they read include it
                entry.future.set_result(verdict)
            finally:
                with self._lock:
                    self._stop_judging(lane)
            with contextlib.suppress(Exception):
                counters = backend.counters()
                stats.sessions, stats.restarts = counters["sessions"], counters["restarts"]

    def gpu_utilization(self) -> dict[str, float]:
        """NVML's mean utilization per lane's GPU, where it is sampled (see LocalExecutor)."""
        return {}

    def close_idle(self, idle_s: float) -> int:
        """Close the lanes' sessions that judged nothing for `idle_s` seconds; how many were closed (a lane
        that cannot say, an actor lost, counts none)."""
        closed = 0
        for backend in self.backends:
            with contextlib.suppress(Exception):
                closed += backend.close_idle(idle_s)
        return closed

    def stats(self) -> ExecutorStats:
        """Where the executor stands now."""
        with self._lock:
            now = time.monotonic()
            wall = 0.0 if self._first_job is None else now - self._first_job
            lanes = [LaneStats(**vars(lane)) for lane in self._lanes]
            # The candidate being judged counts as busy up to now.
            for lane, since in zip(lanes, self._judging_since, strict=True):
                lane.busy_s = min(lane.busy_s + (now - since if since is not None else 0.0), wall)
            return ExecutorStats(
                kind=self.kind,
                lanes=lanes,
                wall_s=wall,
                building=sum(not done for done in self._builds_done.values()),
                waiting_for_build=sum(not e.ready for e in self._entries),
                ready=sum(e.ready for e in self._entries),
                max_ready=self._max_ready,
                built=self._build_counts["built"],
                build_failed=self._build_counts["failed"],
                build_s=self._build_s,
                gpu_utilization=self.gpu_utilization(),
            )

    def close(self) -> None:
        """Cancel what is queued and stop the lanes (a candidate being judged loses its workers)."""
        with self._lock:
            self._closed = True
            for entry in self._entries:
                entry.future.cancel()
            self._entries.clear()
            self._lock.notify_all()
        if self._builds is not None:
            self._builds.shutdown(wait=False, cancel_futures=True)
        for backend in self.backends:
            backend.close()
        # A lane in the middle of a candidate's call ends when that call's limit does (its session is
        # closed, not the candidate's own worker): not waited for beyond LANE_STOP_S, so Ctrl-C ends
        # the driver at once. Its thread is a daemon, and the workers it started die with the driver.
        stop_by = time.monotonic() + LANE_STOP_S
        for thread in self._threads:
            thread.join(timeout=max(0.0, stop_by - time.monotonic()))

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
