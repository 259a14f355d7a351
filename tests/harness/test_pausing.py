"""Pausing a worker's processes for a window: the passes over the process table, checked against a table
that a fork under way changes after the signal is sent (the order of events that /proc shows under load)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cudasmith.harness.walls import pausing

SUPERVISOR, WORKER, CHILD = 100, 101, 102


class ForkingWorker:
    """A worker whose process is inside fork() when it is signalled: it shows as running once more, and
    its child is in the process table only from the moment it shows as stopped."""

    def __init__(self) -> None:
        self.process = SimpleNamespace(pid=SUPERVISOR)
        self.stopped: list[int] = []
        self.forked = False
        self.polls: dict[int, int] = {}

    def status(self, key: str) -> int:
        assert key == "worker_pid"
        return WORKER

    def pause(self, pids: list[int]) -> None:
        self.stopped += [pid for pid in pids if pid not in self.stopped]

    def tree(self) -> dict[int, list[int]]:
        return {SUPERVISOR: [WORKER], WORKER: [CHILD]} if self.forked else {SUPERVISOR: [WORKER]}

    def running(self, pid: int) -> bool:
        """The worker is still finishing its fork the first time it is looked at after its signal."""
        if pid not in self.stopped:
            return True
        self.polls[pid] = self.polls.get(pid, 0) + 1
        if pid == WORKER and self.polls[pid] == 1:
            return True
        self.forked = self.forked or pid == WORKER
        return False


def test_a_child_forked_as_its_parent_was_signalled_is_stopped_too(monkeypatch: pytest.MonkeyPatch) -> None:
    worker = ForkingWorker()
    monkeypatch.setattr(pausing, "process_tree", worker.tree)
    monkeypatch.setattr(pausing, "_running", worker.running)
    monkeypatch.setattr(pausing, "STOP_POLL_S", 0.0)
    pausing.pause_workers([worker], gpu_only=False)  # type: ignore[list-item]
    assert worker.forked, "the worker never showed as stopped"
    assert worker.stopped == [WORKER, CHILD]
    assert not [pid for pid in worker.stopped if worker.running(pid)]


def test_on_a_gpu_a_child_that_holds_no_gpu_is_left_running(monkeypatch: pytest.MonkeyPatch) -> None:
    worker = ForkingWorker()
    monkeypatch.setattr(pausing, "process_tree", worker.tree)
    monkeypatch.setattr(pausing, "_running", worker.running)
    monkeypatch.setattr(pausing, "holds_gpu", lambda pid: False)
    monkeypatch.setattr(pausing, "STOP_POLL_S", 0.0)
    pausing.pause_workers([worker], gpu_only=True)  # type: ignore[list-item]
    assert worker.forked and worker.stopped == [WORKER]
