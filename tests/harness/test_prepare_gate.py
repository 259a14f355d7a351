"""Turns to prepare among the candidate workers of one GPU: at most PREPARES_AT_ONCE make their CUDA
context at once, over every session, so that the first workers are ready first; a turn ends when the
worker's answer arrives or the worker is gone, and a prepare never waits for ever."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from cudasmith.harness import pool as pool_module
from cudasmith.harness.lease import lease_for
from cudasmith.harness.pool import PrepareGate, WorkerPool
from cudasmith.harness.walls.process import WorkerProcess
from cudasmith.harness.wire.messages import WorkerSetup

from conftest import PROBLEMS


class FakeReplies:
    def __init__(self) -> None:
        self.answered = False

    def poll(self, timeout: float = 0.0) -> bool:
        return self.answered


class FakeWorker:
    """What the gate looks at: whether the worker lives and whether an answer waits in its pipe."""

    def __init__(self) -> None:
        self.alive = True
        self.replies = FakeReplies()


def fakes(count: int) -> list[Any]:
    return [FakeWorker() for _ in range(count)]


def test_a_gate_gives_only_so_many_turns_and_frees_one_when_an_answer_arrives() -> None:
    gate = PrepareGate(turns=2)
    first, second, third = fakes(3)
    assert gate.enter(first, block=False) and gate.enter(second, block=False)
    assert not gate.enter(third, block=False) and gate.held == 2
    first.replies.answered = True  # seen without being read: the worker's owner reads it later
    assert gate.enter(third, block=False) and gate.held == 2


def test_a_turn_ends_with_its_worker_or_when_left() -> None:
    gate = PrepareGate(turns=1)
    first, second, third = fakes(3)
    assert gate.enter(first, block=False) and not gate.enter(second, block=False)
    first.alive = False
    assert gate.enter(second, block=False)
    gate.leave(second)
    assert gate.enter(third, block=False)


def test_a_blocking_enter_waits_for_a_turn_and_never_for_ever(monkeypatch: pytest.MonkeyPatch) -> None:
    gate = PrepareGate(turns=1)
    holder, waiter = fakes(2)
    assert gate.enter(holder, block=False)
    threading.Timer(0.3, lambda: setattr(holder.replies, "answered", True)).start()
    started = time.monotonic()
    assert gate.enter(waiter, block=True)
    assert time.monotonic() - started >= 0.25
    # A holder that never answers: the wait gives up after PREPARE_TURN_WAIT_S and goes ahead.
    monkeypatch.setattr(pool_module, "PREPARE_TURN_WAIT_S", 0.2)
    late = FakeWorker()
    started = time.monotonic()
    assert gate.enter(late, block=True) and 0.15 <= time.monotonic() - started < 5


def test_the_gate_is_the_leases_one_per_gpu_for_every_session_of_the_process() -> None:
    assert lease_for("GPU-test-a").prepares is lease_for("GPU-test-a").prepares
    assert lease_for("GPU-test-a").prepares is not lease_for("GPU-test-b").prepares


def test_a_pool_prepares_its_workers_in_turns_and_hands_each_out_ready() -> None:
    gate = PrepareGate(turns=1)
    most = [0]
    enter = gate.enter

    def counted(worker: Any, block: bool) -> bool:
        entered = enter(worker, block)
        most[0] = max(most[0], gate.held)
        return entered

    gate.enter = counted  # type: ignore[method-assign]
    setup = WorkerSetup("candidate", str(PROBLEMS / "add_small.py"), "cpu", defences=False)
    pool = WorkerPool(lambda: WorkerProcess(setup), size=3, limit=3, gate=gate)
    taken: list[WorkerProcess] = []
    try:
        pool.top_up()
        for _ in range(3):
            pool.advance()
            taken.append(pool.take())
        assert most[0] == 1, "one prepare at a time"
        assert pool.started == 3 and gate.held == 0
        assert all(worker.alive for worker in taken)
    finally:
        for worker in taken:
            worker.close()
        pool.close()
