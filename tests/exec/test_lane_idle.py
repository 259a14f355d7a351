"""A lane closes the sessions that judged nothing for a while (a server's sessions of tasks no longer asked
for), never one that is judging, and opens a fresh one when its task comes back."""

from __future__ import annotations

import threading
from pathlib import Path
from types import TracebackType
from typing import ClassVar

from cudasmith.exec import Job, ProblemRef
from cudasmith.exec.base import Executor
from cudasmith.exec.lane import Lane
from cudasmith.exec.local import LocalLane
from cudasmith.harness.options import EvalOptions
from cudasmith.harness.verdict import Verdict
from cudasmith.harness.wire.status import Status
from cudasmith.tasks.problem import Problem, load_problem

from conftest import PROBLEMS

OPTIONS = EvalOptions(device="cpu", timing=False)
ADD = load_problem(PROBLEMS / "add_small.py")


class Session:
    """A session that judges nothing; while `held`, a candidate waits until released."""

    opened: ClassVar[list[Session]] = []

    def __init__(self, problem: Problem, options: EvalOptions) -> None:
        self.closed = False
        self.released = threading.Event()
        self.released.set()
        Session.opened.append(self)

    def judge(self, path: Path) -> Verdict:
        assert self.released.wait(30)
        return Verdict(Status.CORRECT, "fine", "add_small", str(path), "cpu")

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.closed = True


def job(key: str) -> Job:
    return Job(key, ProblemRef.of(ADD), OPTIONS, f"# {key}\n", f"{key}.py")


def test_idle_sessions_are_closed_and_busy_ones_kept() -> None:
    Session.opened.clear()
    lane = Lane("cpu", Session)
    lane.judge(job("a"))
    assert lane.close_idle(3600.0) == 0, "used a moment ago"
    assert lane.close_idle(0.0) == 1 and Session.opened[0].closed
    lane.judge(job("b"))
    assert len(Session.opened) == 2 and lane.sessions_opened == 2, "a fresh session when its task comes back"

    busy = Session.opened[1]
    busy.released.clear()
    judging = threading.Thread(target=lane.judge, args=(job("c"),))
    judging.start()
    while not any(entry.users for entry in lane.sessions.values()):
        judging.join(0.01)
    assert lane.close_idle(0.0) == 0 and not busy.closed, "a session judging a candidate stays"
    busy.released.set()
    judging.join(30)
    lane.close()


def test_an_executor_asks_every_lane() -> None:
    Session.opened.clear()
    lanes = [LocalLane("cpu", Session), LocalLane("cpu", Session)]
    with Executor(lanes) as executor:  # type: ignore[arg-type]
        for future in [executor.submit(job(str(i))) for i in range(4)]:
            assert future.result(timeout=30).status == Status.CORRECT
        assert executor.close_idle(0.0) == len(Session.opened) >= 1
        assert all(session.closed for session in Session.opened)
