"""The child processes of throughput.py's stream mode (throughput_stream.py): a stream judged in sessions
with K candidates in flight, and the interference check. Each reports by calling `emit(**event)`, which
throughput.py writes as one JSON line on the original stdout."""

from __future__ import annotations

import argparse
import collections
import contextlib
import itertools
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stream_interference import ALONE_COPIES, FLIGHT_COPIES, HONEST, INTERFERENCE_TASK
from throughput_stream import BATCH, NO_IN_FLIGHT, in_flight_supported

Emit = Callable[..., None]
# Candidates kept in flight around each honest copy when K is left to its default.
DEFAULT_SPREAD = 4
# The candidate each judging thread judges now (by thread id: the sessions' pools reuse thread names).
JUDGING: dict[int, str] = {}


class FairGate:
    """At most `k` holders at once, let in in the order they asked. threading's semaphores let a thread
    that has just released take the slot straight back before a woken waiter runs: on the H100, one
    task's session kept all K slots until its queue ran dry (K=1: softmax from 5 s, relu only from 42 s),
    which two searches sharing a GPU would not see."""

    def __init__(self, k: int) -> None:
        self._k = k
        self._held = 0
        self._waiting: collections.deque[object] = collections.deque()
        self._cond = threading.Condition()

    def __enter__(self) -> None:
        ticket = object()
        with self._cond:
            self._waiting.append(ticket)
            while self._waiting[0] is not ticket or self._held >= self._k:
                self._cond.wait()
            self._waiting.popleft()
            self._held += 1
            self._cond.notify_all()  # the next in line may fit too

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._held -= 1
            self._cond.notify_all()

    def waiting(self) -> int:
        """How many threads wait to be let in."""
        with self._cond:
            return len(self._waiting)


def _options(args: argparse.Namespace) -> Any:
    from cudasmith.harness.options import EvalOptions

    extra = {"in_flight": args.in_flight} if args.in_flight is not None and in_flight_supported() else {}
    return EvalOptions(device=args.device, baselines=tuple(args.baselines.split(",")), **extra)


def _timing(verdict: Any) -> dict[str, Any]:
    """How the verdict's times were taken, without the plan: a TimingReport's fields, or the dict an older
    cudasmith gave."""
    timing = verdict.timing
    if timing is None:
        return {}
    data = dict(timing.to_dict() if hasattr(timing, "to_dict") else timing)
    data.pop("plan", None)
    return data


def _config_costs(verdict: Any) -> list[dict[str, Any]]:
    """Per timed config of the candidate: its median (ms), samples, stop reason, and where its
    measurement's wall time went (seconds: warm-up, sampling, reading CUPTI's records)."""
    found = []
    for config in getattr(verdict, "configs", []):
        timing = getattr(config, "timing", None)
        if timing is None:
            continue
        found.append(
            {"median_ms": timing.median_ms, "samples": timing.n, "stop": timing.stop,
             **{f"{key}_s": round(value, 4) for key, value in (getattr(timing, "phases_s", None) or {}).items()}}
        )  # fmt: skip
    return found


def _candidate_event(name: str, verdict: Any, t: float | None = None) -> dict[str, Any]:
    timing = _timing(verdict)
    status = str(getattr(verdict.status, "value", verdict.status))
    return {
        "event": "candidate",
        "name": name,
        "status": status,
        "seconds": verdict.wall_s,
        "t": t,  # when the verdict came, on the phases' clock
        "build_s": getattr(verdict, "build_s", None),
        "reason": verdict.reason[:300],
        "speedup": verdict.speedup,
        "timing": timing,
        "configs": _config_costs(verdict),
        # Why a window was timed again (which process shared it), as the verdict's notes say.
        "retimed": [note for note in getattr(verdict, "notes", []) if "timed again" in note],
    }


class Phases:
    """What each candidate in flight is doing, from the session's progress lines: an event each time a
    candidate's line changes (seconds since its task's session began), so that a row cut off by its share
    of the budget shows where its candidates were, and a slow one where their time went."""

    def __init__(self, emit: Emit, started: float, root: Path) -> None:
        self._emit = emit
        self._started = started
        self._root = root
        self._names: dict[str, str] = {}  # thread name -> the candidate that thread judges
        self._last: dict[str, str] = {}
        self._lock = threading.Lock()

    def judging(self, judge: Any) -> None:
        """Wrap `judge.judge` so that each thread's lines are the candidate's it judges."""
        original = judge.judge

        def judge_one(solution: Any) -> Any:
            with self._lock:
                path = Path(solution)
                name = path.relative_to(self._root) if path.is_relative_to(self._root) else path.name
                self._names[threading.current_thread().name] = str(name)
                JUDGING[threading.get_ident()] = str(name)
            return original(solution)

        judge.judge = judge_one

    def __call__(self, what: str, done: int = 0, total: int = 0) -> None:
        thread = threading.current_thread().name
        with self._lock:
            name = self._names.get(thread, thread)
            if self._last.get(name) == what:
                return
            self._last[name] = what
        self._emit(event="phase", name=name, what=what[:120], t=round(time.perf_counter() - self._started, 3))


def child_stream(args: argparse.Namespace, emit: Emit) -> None:
    """Each task's stream in a session of its own, the sessions side by side on the GPU (they share its
    timing lease) with at most K candidates in flight among them all, their builds sent ahead before the
    first session starts: while one task's queue waits for an extension's build, the other's candidates
    are judged, as two searches on one GPU would be. The builds go before this process imports torch
    (ProblemRef.from_file), as `cudasmith eval` of several solutions sends them."""
    from cudasmith.exec.ahead import BuildsAhead
    from cudasmith.exec.jobs import ProblemRef

    options = _options(args)
    by_task: dict[str, list[str]] = {}
    for name in args.names:
        by_task.setdefault(str(Path(name).parent), []).append(name)
    pools: dict[str, Any] = {}
    early = hasattr(ProblemRef, "from_file")  # a checkout from before it loads each problem first
    if early:
        from cudasmith.tasks.lookup import find_problem_file

        for task, names in by_task.items():  # a search queues its builds as its candidates come: all at once
            pools[task] = BuildsAhead(ProblemRef.from_file(*find_problem_file(task)), options)
            pools[task].start([args.candidates / name for name in names])

    from cudasmith.exec import ahead as builds_ahead
    from cudasmith.harness.session import Judge, resolve_problem

    # A checkout from before judged_as_done gives its verdicts in order: numbered here.
    judged = getattr(builds_ahead, "judged_as_done", None) or (
        lambda judge, paths, ahead: enumerate(builds_ahead.judge_built_ahead(judge, paths, ahead=ahead))
    )
    problems = {task: resolve_problem(task) for task in by_task}
    if not early:
        for task, names in by_task.items():
            pools[task] = BuildsAhead(problems[task], options)
            pools[task].start([args.candidates / name for name in names])
    k = options.candidates_in_flight() if hasattr(options, "candidates_in_flight") else 1
    in_flight = FairGate(k)  # K is the GPU's, whichever task a candidate is of

    began = time.perf_counter()  # the phases' clock, the same for every task
    emit(event="clock", at=time.monotonic())  # the parent's clock too: what the child's start cost
    record_holds(emit, began)

    def one_task(task: str, names: list[str]) -> None:
        problem, ahead = problems[task], pools[task]
        paths = [args.candidates / name for name in names]
        started, done = time.perf_counter(), set[int]()
        phases = Phases(emit, began, args.candidates)
        try:
            with Judge(problem, options, phases, candidates=len(names)) as judge:
                phases.judging(judge)
                judge_one = judge.judge

                def gated(solution: Any) -> Any:
                    with in_flight:
                        return judge_one(solution)

                judge.judge = gated  # type: ignore[method-assign]
                emit(event="setup", task=task, seconds=time.perf_counter() - started, in_flight=k)
                # As a search takes them: each verdict as soon as it is done, not in the order given.
                for index, verdict in judged(judge, paths, ahead=ahead):
                    emit(**_candidate_event(names[index], verdict, round(time.perf_counter() - began, 3)))
                    _tally(emit)  # so far: a row its budget cuts short still has its bound
                    done.add(index)
                _mark(emit, began, task, "every verdict given; closing the session")
                emit(
                    event="startup",
                    task=task,
                    marks=getattr(getattr(judge, "startup", None), "marks", dict)(),
                )
            _mark(emit, began, task, "session closed")
        except Exception as exc:  # a harness failure: what is left of the task is recorded against it
            reason = f"{type(exc).__name__}: {exc}"[:300]
            for index, name in enumerate(names):
                if index not in done:
                    emit(event="candidate", name=name, status="harness_error", seconds=None, reason=reason)

    threads = [
        threading.Thread(target=one_task, args=(task, names), name=f"stream-{task}", daemon=True)
        for task, names in by_task.items()
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        _tally(emit)
        for task, names in by_task.items():
            _extension_builds(emit, pools.get(task), task, [args.candidates / name for name in names])
        for ahead in pools.values():
            ahead.close()
        _mark(emit, began, "child", "builds ahead closed")


def _extension_builds(emit: Emit, ahead: Any, task: str, paths: list[Path]) -> None:
    """How long each extension build ahead of `task`'s candidates took, from its worker's start to its
    end (a build that did not end says nothing): their candidates wait for them, so the longest is a
    floor under the row's wall time."""
    from cudasmith.exec.prebuild import slow_build

    results = getattr(ahead, "results", {})
    for path in paths:
        source = path.read_text(errors="replace")
        if slow_build(source) and (result := results.get(source)) is not None:
            emit(event="build", task=task, name=path.name, seconds=result.seconds, ok=result.ok)


def record_holds(emit: Emit, began: float) -> None:
    """Report every hold of the device's lease in this process (when it was granted and released, on the
    phases' clock, and the candidate whose thread held it: None for a session's own, its baselines ahead):
    the row's wall-time table places them. A checkout from before the lease's tally has no hold to wrap."""
    from cudasmith.harness import lease as lease_module

    original = lease_module.TimingLease.hold

    @contextlib.contextmanager
    def hold(self: Any, owner: Any = None, session: Any = None) -> Any:
        with original(self, owner, session) as held:
            granted = time.perf_counter() - began
            try:
                yield held
            finally:
                name = JUDGING.get(threading.get_ident())
                emit(
                    event="hold",
                    name=name,
                    begin=round(granted, 4),
                    end=round(time.perf_counter() - began, 4),
                )

    lease_module.TimingLease.hold = hold  # type: ignore[method-assign]


def _tally(emit: Emit) -> None:
    """The lease's tally of every hold in this process (harness/lease.py): the row's exclusive device time."""
    from cudasmith.harness import lease as lease_module

    tallies = [vars(lease.tally) for lease in lease_module._leases.values() if hasattr(lease, "tally")]
    if tallies:
        emit(event="tally", **{key: sum(t[key] for t in tallies) for key in tallies[0]})


def _mark(emit: Emit, began: float, who: str, what: str) -> None:
    """A step of the row's own end (a task's session, the child's builds), on the phases' clock."""
    emit(event="mark", who=who, what=what, t=round(time.perf_counter() - began, 3))


def child_interference(args: argparse.Namespace, emit: Emit) -> None:
    """The honest kernel judged alone, then among the stream's variants kept in flight, in one session."""
    from cudasmith.exec.ahead import judge_built_ahead
    from cudasmith.harness.session import Judge, resolve_problem

    if args.in_flight is None or not in_flight_supported():
        emit(event="note", text=NO_IN_FLIGHT if not in_flight_supported() else "K left to its default")
    source = (BATCH / HONEST).read_text()
    spread = args.in_flight or DEFAULT_SPREAD
    busy = itertools.cycle([args.candidates / name for name in args.names])
    with tempfile.TemporaryDirectory(prefix="cudasmith-interference-") as folder:
        copies = [Path(folder) / f"honest_{i}.py" for i in range(ALONE_COPIES + FLIGHT_COPIES)]
        for index, copy in enumerate(copies):
            copy.write_text(f"# copy {index} of {HONEST}\n{source}")
        queue: list[Path] = [next(busy) for _ in range(spread)]
        for copy in copies[ALONE_COPIES:]:
            queue += [copy, *(next(busy) for _ in range(spread))]
        options = _options(args)
        problem = resolve_problem(INTERFERENCE_TASK)
        with Judge(problem, options, candidates=ALONE_COPIES + len(queue)) as judge:
            for copy in copies[:ALONE_COPIES]:
                _honest(emit, "alone", judge.judge(copy))
            for path, verdict in zip(queue, judge_built_ahead(judge, queue), strict=True):
                if path in copies:
                    _honest(emit, "in_flight", verdict)


def _honest(emit: Emit, role: str, verdict: Any) -> None:
    configs = verdict.to_dict()["configs"]
    timing = _timing(verdict)
    status = str(getattr(verdict.status, "value", verdict.status))
    times_ms = [config.get("time_ms") for config in configs]
    reason = "" if status == "correct" else verdict.reason
    emit(event="honest", role=role, status=status, times_ms=times_ms, timing=timing, reason=reason)
