"""A session's start, request by request: the judge's worker describes the configs (meta tensors, no
device) before it loads the problem on its device, and a session opened beside another on a GPU asks
for that load, and the baseline worker's, only inside a step of the lease."""

from __future__ import annotations

from typing import Any

import pytest

from cudasmith.errors import HarnessError
from cudasmith.harness.baselines import SessionBaselines
from cudasmith.harness.lease import TimingLease
from cudasmith.harness.walls.process import WorkerProcess
from cudasmith.harness.wire.messages import (
    Ack,
    Describe,
    Described,
    Failed,
    LoadProblem,
    Ping,
    ProblemLoaded,
    WorkerSetup,
)
from cudasmith.harness.wire.results import ConfigDescription
from cudasmith.harness.witnesses.oracle import Oracle

from conftest import PROBLEMS


class ScriptedWorker:
    """Answers each request by its type, in the order sent (as a worker does), and records the order."""

    def __init__(self, fail: type | None = None) -> None:
        self.sent: list[Any] = []
        self.read: list[str] = []
        self.fail = fail
        self.alive = True
        self.memory_limit = 1 << 30

    def send(self, request: Any) -> int:
        self.sent.append(request)
        return len(self.sent)

    def wait(self, request_id: int, timeout_s: float, what: str) -> Any:
        assert request_id == len(self.read) + 1, "answers are read in the order the requests were sent"
        request = self.sent[request_id - 1]
        self.read.append(type(request).__name__)
        if isinstance(request, self.fail or ()):
            return Failed("runtime_error", "boom", "", "", harness=True)
        if isinstance(request, Describe):
            return Described([ConfigDescription(input_bytes=8 * len(request.configs))])
        if isinstance(request, LoadProblem):
            return ProblemLoaded("scripted device")
        raise AssertionError(f"unexpected request {request!r}")

    def kinds(self) -> list[str]:
        return [type(request).__name__ for request in self.sent]


def oracle(worker: ScriptedWorker, load: bool) -> Oracle:
    return Oracle(worker, TimingLease(gpu=False), [{"n": 1}], load=load)  # type: ignore[arg-type]


def test_the_configs_are_described_before_the_problem_is_loaded_on_the_device() -> None:
    worker = ScriptedWorker()
    found = oracle(worker, load=True).loaded()
    assert worker.kinds() == ["Describe", "LoadProblem"] and worker.read == ["Describe", "LoadProblem"]
    assert found.device_name == "scripted device"


def test_a_deferred_load_is_asked_for_only_when_the_session_says_so() -> None:
    worker = ScriptedWorker()
    judge_side = oracle(worker, load=False)
    judge_side.wait_described()  # beside another session's windows: no device work asked for
    assert worker.kinds() == ["Describe"] and judge_side.described[0].input_bytes == 8
    judge_side.send_load()  # inside the step
    judge_side.send_load()  # once only
    assert worker.kinds() == ["Describe", "LoadProblem"]
    assert judge_side.loaded().device_name == "scripted device"
    assert worker.read == ["Describe", "LoadProblem"]


def test_loaded_asks_for_a_load_never_asked_for() -> None:
    """A session whose step failed still loads the problem when its first candidate asks."""
    worker = ScriptedWorker()
    assert oracle(worker, load=False).loaded().device_name == "scripted device"
    assert worker.kinds() == ["Describe", "LoadProblem"]


def test_a_failed_description_is_the_failure_loaded_gives_and_nothing_is_loaded() -> None:
    worker = ScriptedWorker(fail=Describe)
    judge_side = oracle(worker, load=False)
    judge_side.wait_described()  # the failure is kept, not raised here
    with pytest.raises(HarnessError, match="describing the configs: boom"):
        judge_side.loaded()
    with pytest.raises(HarnessError, match="describing the configs"):
        judge_side.loaded()  # the same answer again
    assert worker.kinds() == ["Describe"]


def test_the_baseline_worker_imports_before_it_is_asked_to_load() -> None:
    """A real baseline worker on the CPU: started without its load, it answers a ping once its imports
    are done, and loads the problem only when ready() asks."""
    started: list[WorkerProcess] = []

    def start() -> WorkerProcess:
        started.append(WorkerProcess(WorkerSetup("reference", str(PROBLEMS / "add_small.py"), "cpu")))
        return started[-1]

    baselines = SessionBaselines(start, ("eager",), "{}")
    try:
        baselines.start(load=False)
        baselines.imported()
        assert not baselines._load_sent and baselines._load_id is None
        assert started[0].received == 1, "one answer: the ping's"
        baselines.ready()
        assert baselines._load_sent and baselines._load_id is None, "loaded, and the load's answer read"
        assert started[0].received == 2 and len(started) == 1
        baselines.imported()  # after the load: nothing more is asked
        assert started[0].received == 2
    finally:
        baselines.close()


def test_a_ping_is_answered_by_the_judges_own_worker() -> None:
    worker = WorkerProcess(WorkerSetup("reference", str(PROBLEMS / "add_small.py"), "cpu"))
    try:
        assert isinstance(worker.request(Ping(), 120, "starting"), Ack)
    finally:
        worker.close()
