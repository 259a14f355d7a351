"""One lane: a device and the judge session open on it. A lane judges several candidates at once (called
from as many threads), all in its one session; it keeps that session while candidates of the same problem
and options come, and opens another, once the candidates in the old one are done, when they change.

The session's reference and baseline workers outlive candidates; if one of them breaks (a sticky CUDA
error that reached the judge's own side, a worker killed from outside), the lane drops the session once
the candidates still in it are done, and judges each candidate that saw it break again in a fresh one.
Candidate workers need no such care: each serves one candidate and dies with it.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from cudasmith.errors import HarnessError
from cudasmith.exec.jobs import Job
from cudasmith.harness.options import EvalOptions
from cudasmith.harness.session import Judge
from cudasmith.harness.verdict import Verdict
from cudasmith.tasks.problem import Problem


class JudgeSession(Protocol):
    """What a lane needs of a judge session: one solution file in, its verdict out (from several threads)."""

    def judge(self, path: Path) -> Verdict: ...


# Opens a session for a problem and options: `Judge` itself; tests pass a scripted judge instead.
JudgeFactory = Callable[[Problem, EvalOptions], AbstractContextManager[Any]]


class Lane:
    """Judges candidates on `device` ('cuda:N', 'cuda' for the one GPU a Ray worker sees, or 'cpu'), up to
    `in_flight` at once (a session's default when the candidates' options name none)."""

    def __init__(self, device: str, factory: JudgeFactory = Judge, in_flight: int | None = None) -> None:
        self.device = device
        self.factory = factory
        self.in_flight = in_flight
        self.scratch = Path(tempfile.mkdtemp(prefix="cudasmith-lane-"))
        self._stack = ExitStack()
        self.session: JudgeSession | None = None
        self.session_key: tuple[str, str] | None = None
        self.sessions_opened = 0
        self.restarts = 0
        self._cond = threading.Condition()
        self._users = 0  # candidates being judged in the open session
        self._broken = False  # the open session's judge failed: no candidate enters it again

    def judge(self, job: Job) -> Verdict:
        """The candidate's verdict, from the open session or a new one; a second failure of the judge's
        own side is raised (HarnessError)."""
        with self._cond:
            path = job.solution_file(self.scratch)
        session = self._enter(job)
        try:
            return session.judge(path)
        except HarnessError:
            with self._cond:
                self._broken = self._broken or session is self.session
                self.restarts += 1
        finally:
            self._leave()
        session = self._enter(job)
        try:
            return session.judge(path)
        finally:
            self._leave()

    def _enter(self, job: Job) -> JudgeSession:
        """The session for this candidate, counted as in use; waits for the candidates of another (or a
        broken) session to finish before opening it."""
        with self._cond:
            while True:
                if self.session is not None and self.session_key == job.session_key and not self._broken:
                    break
                if self._users == 0:
                    self._open(job)
                    break
                self._cond.wait()
            self._users += 1
            assert self.session is not None
            return self.session

    def _leave(self) -> None:
        with self._cond:
            self._users -= 1
            self._cond.notify_all()

    def _open(self, job: Job) -> None:
        self._close_session()
        problem = job.problem.load(self.scratch)
        in_flight = job.options.in_flight or self.in_flight
        options = replace(job.options, device=self.device, in_flight=in_flight)
        self.session = self._stack.enter_context(self.factory(problem, options))
        self.session_key = job.session_key
        self._broken = False
        self.sessions_opened += 1

    def _close_session(self) -> None:
        self._stack.close()
        self.session, self.session_key = None, None

    def close(self) -> None:
        with self._cond:
            self._close_session()
        shutil.rmtree(self.scratch, ignore_errors=True)
