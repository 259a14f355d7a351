"""One lane: a device and the judge sessions open on it. A lane judges several candidates at once (called
from as many threads), each in the session of its problem and options. It keeps up to OPEN_SESSIONS
sessions open: a candidate of another problem opens its session at once, while the candidates of the
last one finish, so that the new session's start (its workers, the problem's load, the reference's
baselines) overlaps them instead of waiting for the last of them. The sessions share the device's
timing lease (harness/lease.py): a timing window of one has the device alone against the others too.
When a session more is wanted, the one idle longest is closed; one that still judges is never closed.

A session's reference and baseline workers outlive candidates; if one of them breaks (a sticky CUDA
error that reached the judge's own side, a worker killed from outside), the lane drops the session once
the candidates still in it are done, and judges each candidate that saw it break again in a fresh one.
Candidate workers need no such care: each serves one candidate and dies with it.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from cudasmith.errors import HarnessError
from cudasmith.exec.jobs import Job
from cudasmith.harness.options import EvalOptions
from cudasmith.harness.session import Judge
from cudasmith.harness.verdict import Verdict
from cudasmith.tasks.problem import Problem
from cudasmith.tempdirs import owned_tempdir


class JudgeSession(Protocol):
    """What a lane needs of a judge session: one solution file in, its verdict out (from several threads).
    A session that starts workers ahead may also have `expect(queued)`: how many candidates still wait
    for it (Judge.expect); one that screens candidates, `raise_bar(speedup)` (Judge.raise_bar)."""

    def judge(self, path: Path) -> Verdict: ...


# Opens a session for a problem and options: `Judge` itself; tests pass a scripted judge instead.
JudgeFactory = Callable[[Problem, EvalOptions], AbstractContextManager[Any]]

# Sessions a lane keeps open at once: the next problem's session starts while the last one's candidates
# finish. Each holds a reference worker, a baseline worker and its spare candidate workers.
OPEN_SESSIONS = 2

SessionKey = tuple[str, str]


@dataclass
class _Open:
    """A session of the lane: None while it opens; its candidates being judged; whether its judge broke."""

    session: JudgeSession | None = None
    stack: ExitStack = field(default_factory=ExitStack)
    users: int = 0
    broken: bool = False
    last_used: float = field(default_factory=time.monotonic)


class Lane:
    """Judges candidates on `device` ('cuda:N', 'cuda' for the one GPU a Ray worker sees, or 'cpu'), up to
    `in_flight` at once (a session's default when the candidates' options name none)."""

    def __init__(self, device: str, factory: JudgeFactory = Judge, in_flight: int | None = None) -> None:
        self.device = device
        self.factory = factory
        self.in_flight = in_flight
        self.scratch = owned_tempdir("cudasmith-lane-")
        self.sessions: dict[SessionKey, _Open] = {}
        self.sessions_opened = 0
        self.restarts = 0
        self._cond = threading.Condition()

    def judge(self, job: Job) -> Verdict:
        """The candidate's verdict, from its problem's open session or a new one; a second failure of the
        judge's own side is raised (HarnessError)."""
        with self._cond:
            path = job.solution_file(self.scratch)
        entry = self._enter(job)
        try:
            assert entry.session is not None
            return entry.session.judge(path)
        except HarnessError:
            with self._cond:
                entry.broken = True
                self.restarts += 1
        finally:
            self._leave(entry)
        entry = self._enter(job)
        try:
            assert entry.session is not None
            return entry.session.judge(path)
        finally:
            self._leave(entry)

    def _enter(self, job: Job) -> _Open:
        """The open session for this candidate, counted as in use, or a new one opened for it. A new one
        waits while OPEN_SESSIONS are open and judging, or while the broken session of its key still
        judges; an idle one is closed to make room."""
        key = job.session_key
        while True:
            idle: list[_Open] = []
            with self._cond:
                entry = self.sessions.get(key)
                if entry is not None and not entry.broken:
                    if entry.session is None:  # another thread is opening it
                        self._cond.wait()
                        continue
                    entry.users += 1
                    entry.last_used = time.monotonic()
                    _expect(entry.session, job)
                    return entry
                if entry is not None:  # broken: replaced once its candidates are done
                    if entry.users:
                        self._cond.wait()
                        continue
                    idle.append(self.sessions.pop(key))
                elif len(self.sessions) >= OPEN_SESSIONS:
                    ready = [e for e in self.sessions.values() if e.session is not None and e.users == 0]
                    if not ready:
                        self._cond.wait()
                        continue
                    oldest = min(ready, key=lambda e: e.last_used)
                    idle.append(self.sessions.pop(next(k for k, e in self.sessions.items() if e is oldest)))
                if not idle:
                    entry = self.sessions[key] = _Open(users=1)
            for old in idle:  # outside the lock: its workers' exits take a while
                old.stack.close()
            if not idle:
                assert entry is not None  # with nothing idle, the placeholder was made above
                return self._open(job, entry)

    def _open(self, job: Job, entry: _Open) -> _Open:
        """Open the session `entry` stands for (outside the lock, so that the lane's other sessions judge
        on); on failure the placeholder goes and whoever waited for it tries again."""
        try:
            with self._cond:  # the scratch folder is the lane's: files go there under its lock
                problem = job.problem.load(self.scratch)
            in_flight = job.options.in_flight or self.in_flight
            options = own = replace(job.options, device=self.device, in_flight=in_flight)
            if job.queued_alike is not None and options.warm_workers is None:
                # Workers started now for this candidate and those queued behind it, not more.
                options = replace(options, warm_workers=min(options.warm(), 1 + job.queued_alike))
            session = entry.stack.enter_context(self.factory(problem, options))
            if hasattr(session, "warm_most"):
                # Later counts may grow the pool back to the session's own: a service's candidates arrive
                # one by one, and its first, handed out before the rest were queued, would have kept one
                # worker ahead for the session's whole life (with two or more in flight).
                session.warm_most = max(1, own.warm())
            _expect(session, job)
        except BaseException:
            entry.stack.close()
            with self._cond:
                self.sessions.pop(job.session_key, None)
                self._cond.notify_all()
            raise
        with self._cond:
            entry.session = session
            self.sessions_opened += 1
            self._cond.notify_all()
        return entry

    def _leave(self, entry: _Open) -> None:
        with self._cond:
            entry.users -= 1
            entry.last_used = time.monotonic()
            self._cond.notify_all()

    def close_idle(self, idle_s: float) -> int:
        """Close the sessions no candidate has used for `idle_s` seconds (a service's sessions of problems
        no longer asked for), so that their workers do not hold the device; how many were closed."""
        now = time.monotonic()
        with self._cond:
            idle = [
                key
                for key, entry in self.sessions.items()
                if entry.session is not None and entry.users == 0 and now - entry.last_used >= idle_s
            ]
            closing = [self.sessions.pop(key) for key in idle]
            self._cond.notify_all()
        for entry in closing:  # outside the lock: its workers' exits take a while
            entry.stack.close()
        return len(closing)

    def close(self) -> None:
        with self._cond:
            sessions, self.sessions = list(self.sessions.values()), {}
        for entry in sessions:
            entry.stack.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


def _expect(session: JudgeSession, job: Job) -> None:
    """Tell a session that starts workers ahead how many candidates still wait for it, where known; and one
    that screens candidates, the run's best confirmed speedup (Judge.raise_bar)."""
    expect = getattr(session, "expect", None)
    if expect is not None and job.queued_alike is not None:
        expect(job.queued_alike, job.handed_out)
    raise_bar = getattr(session, "raise_bar", None)
    if raise_bar is not None and job.best_speedup is not None:
        raise_bar(job.best_speedup)
