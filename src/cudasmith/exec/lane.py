"""One lane: a device and the judge session open on it. A lane judges one candidate at a time; it keeps
its session while candidates of the same problem and options come, and opens another when they change.

The session's reference and baseline workers outlive candidates; if one of them breaks (a sticky CUDA
error that reached the judge's own side, a worker killed from outside), the lane drops the session and
judges the candidate again in a fresh one. Candidate workers need no such care: each serves one
candidate and dies with it.
"""

from __future__ import annotations

import shutil
import tempfile
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
    """What a lane needs of a judge session: one solution file in, its verdict out."""

    def judge(self, path: Path) -> Verdict: ...


# Opens a session for a problem and options: `Judge` itself; tests pass a scripted judge instead.
JudgeFactory = Callable[[Problem, EvalOptions], AbstractContextManager[Any]]


class Lane:
    """Judges candidates on `device` ('cuda:N', 'cuda' for the one GPU a Ray worker sees, or 'cpu')."""

    def __init__(self, device: str, factory: JudgeFactory = Judge) -> None:
        self.device = device
        self.factory = factory
        self.scratch = Path(tempfile.mkdtemp(prefix="cudasmith-lane-"))
        self._stack = ExitStack()
        self.session: JudgeSession | None = None
        self.session_key: tuple[str, str] | None = None
        self.sessions_opened = 0
        self.restarts = 0

    def judge(self, job: Job) -> Verdict:
        """The candidate's verdict, from the open session or a new one; a second failure of the judge's
        own side is raised (HarnessError)."""
        path = job.solution_file(self.scratch)
        try:
            return self._session(job).judge(path)
        except HarnessError:
            self.restarts += 1
            self._close_session()
            return self._session(job).judge(path)

    def _session(self, job: Job) -> JudgeSession:
        if self.session is not None and self.session_key == job.session_key:
            return self.session
        self._close_session()
        problem = job.problem.load(self.scratch)
        self.session = self._stack.enter_context(
            self.factory(problem, replace(job.options, device=self.device))
        )
        self.session_key = job.session_key
        self.sessions_opened += 1
        return self.session

    def _close_session(self) -> None:
        self._stack.close()
        self.session, self.session_key = None, None

    def close(self) -> None:
        self._close_session()
        shutil.rmtree(self.scratch, ignore_errors=True)
