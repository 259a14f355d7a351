"""The service behind `cudasmith serve`, over lanes that judge nothing (they read a verdict off the source):
each submission stored before its id is given; identical ones judged once, resubmissions served from the
store unless fresh; what a stopped service left is judged by the next; a full queue, a source too large, an
unknown task and bad options refused whole, with their status, touching nothing queued."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import cudasmith
from cudasmith.errors import HarnessError
from cudasmith.exec import Job
from cudasmith.exec.base import Executor
from cudasmith.harness.options import EvalOptions
from cudasmith.harness.verdict import Verdict
from cudasmith.harness.wire.status import Status
from cudasmith.report.export import CORRECT_BONUS, reward
from cudasmith.serve.models import CandidateIn, JudgingOptions
from cudasmith.serve.protocol import State
from cudasmith.serve.service import JudgeService, ServeSettings
from cudasmith.serve.sessions import Refused
from cudasmith.store import RunStore

from conftest import PROBLEMS

TASK = "level1/vector_add"
WAIT_S = 30


class Scripted:
    """A lane that reads its verdict off the source ("wrong" in it: incorrect; "breaks": the judge itself
    fails); while `held`, each candidate waits until released. It keeps what it judged, and under which
    options."""

    name = "scripted"

    def __init__(self) -> None:
        self.judged: list[str] = []
        self.options: list[EvalOptions] = []
        self.released = threading.Event()
        self.released.set()
        self.taken = threading.Semaphore(0)

    def judge(self, job: Job) -> Verdict:
        self.taken.release()
        assert self.released.wait(WAIT_S)
        self.judged.append(job.source)
        self.options.append(job.options)
        if "breaks" in job.source:
            raise HarnessError("the reference worker died")
        status = Status.INCORRECT if "wrong" in job.source else Status.CORRECT
        verdict = Verdict(status, "scripted", job.problem.name, job.file_name, "cpu")
        verdict.speedup = 2.0 if status is Status.CORRECT else None
        return verdict

    def counters(self) -> dict[str, int]:
        return {"sessions": 1, "restarts": 0}

    def close(self) -> None:
        self.released.set()


def candidate(source: str, fresh: bool = False, **fields: object) -> CandidateIn:
    return CandidateIn.model_validate({"source": source, "task": TASK, "fresh": fresh, **fields})


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    with RunStore(tmp_path / "store.db") as opened:
        yield opened


def service(store: RunStore, lane: Scripted, **settings: object) -> JudgeService:
    options = EvalOptions(device="cpu", timing=False)
    return JudgeService(store, Executor([lane], in_flight=2), ServeSettings(options, **settings))


def finished(service: JudgeService, ids: list[int]) -> list[object]:
    for id in ids:
        done = service.done(id)
        if done is not None:
            done.result(timeout=WAIT_S)
    return [service.state(id) for id in ids]


def test_identical_submissions_are_judged_once_and_a_resubmission_reuses_the_stored_verdict(
    store: RunStore,
) -> None:
    lane = Scripted()
    lane.released.clear()
    with service(store, lane) as served:
        ids = served.submit([candidate("# a\n"), candidate("# a\n"), candidate("# wrong\n")])
        assert lane.taken.acquire(timeout=WAIT_S)
        states = [served.state(id).state for id in ids]
        assert states[0] is states[1] is State.RUNNING, "the twin is as far as the one it waits for"
        assert states[2] in (State.QUEUED, State.RUNNING)
        lane.released.set()
        first, twin, wrong = finished(served, ids)
        assert sorted(lane.judged) == ["# a\n", "# wrong\n"], "each code judged once"
        assert first.state is State.DONE and not first.cached and first.verdict["status"] == "correct"  # type: ignore[attr-defined]
        assert twin.cached and twin.verdict["status"] == "correct"  # type: ignore[attr-defined]
        assert wrong.verdict["status"] == "incorrect" and wrong.reward == 0.0  # type: ignore[attr-defined]
        assert first.reward == CORRECT_BONUS + 2.0  # type: ignore[attr-defined]

        again = served.submit([candidate("# a\n")])[0]
        assert served.done(again) is None and served.state(again).cached, "served from the store at once"
        fresh = served.submit([candidate("# a\n", fresh=True)])[0]
        assert not finished(served, [fresh])[0].cached  # type: ignore[attr-defined]
        assert lane.judged.count("# a\n") == 2, "fresh=true judges it again"
        # Other options are another session and another cache key: judged anew.
        other = served.submit([candidate("# a\n", options={"seeds": 1})])[0]
        assert not finished(served, [other])[0].cached  # type: ignore[attr-defined]
        assert served.metrics().reused == 2 and served.metrics().judged == 4


def test_a_requests_config_time_limit_is_its_sessions_and_in_its_key(store: RunStore) -> None:
    lane = Scripted()
    with service(store, lane) as served:
        ids = served.submit([candidate("# a\n"), candidate("# a\n", options={"config_time_limit": 30})])
        states = finished(served, ids)
    assert not any(state.cached for state in states), "another session and cache key: judged anew"  # type: ignore[attr-defined]
    assert sorted(options.config_time_limit_s for options in lane.options) == [30.0, 600.0]
    requests = [run.options.get("request") or {} for run in store.runs(kind="serve")]
    assert sorted(request.get("config_time_limit", 0) for request in requests) == [0, 30.0]


def test_what_a_stopped_server_left_is_judged_by_the_next_and_nothing_half_judged_is_stored(
    store: RunStore,
) -> None:
    first_lane = Scripted()
    first_lane.released.clear()
    first = service(store, first_lane)
    ids = first.submit([candidate(f"# candidate {i}\n") for i in range(4)] + [candidate("# candidate 0\n")])
    assert first_lane.taken.acquire(timeout=WAIT_S)
    first.close()  # its lane returns the candidates it holds: they must not be stored as verdicts
    assert all(c.verdict is None for c in store.candidates(store.runs(kind="serve")[0].id))

    second_lane = Scripted()
    with service(store, second_lane) as second:
        assert second.recovered == 5
        states = finished(second, ids)
    assert all(s.state is State.DONE for s in states)  # type: ignore[attr-defined]
    assert sorted(second_lane.judged) == [f"# candidate {i}\n" for i in range(4)], "the twin was not judged"
    assert states[-1].cached  # type: ignore[attr-defined]


def test_a_full_queue_refuses_the_whole_batch_with_retry_after_and_the_queue_finishes(
    store: RunStore,
) -> None:
    lane = Scripted()
    lane.released.clear()
    with service(store, lane, max_queue=2) as served:
        ids = served.submit([candidate("# one\n"), candidate("# two\n")])
        with pytest.raises(Refused) as refused:
            served.submit([candidate("# three\n")])
        assert (
            refused.value.status == 429 and refused.value.retry_after_s and refused.value.retry_after_s >= 1
        )
        assert "queue is full" in str(refused.value)
        lane.released.set()
        assert [s.state for s in finished(served, ids)] == [State.DONE, State.DONE]  # type: ignore[attr-defined]
        assert len(store.candidates(store.runs(kind="serve")[0].id)) == 2, "the refused batch stored nothing"
        assert served.submit([candidate("# three\n")]), "room again once the queue moved"


def test_bad_requests_get_their_status_and_store_nothing(store: RunStore) -> None:
    lane = Scripted()
    with service(store, lane, max_source_bytes=100) as served:
        cases = [
            (candidate("# ok\n", task="level1/softmaxx"), 404, "did you mean level1/softmax"),
            (candidate("#" * 101), 413, "limit of 100 bytes"),
            (candidate("# ok\n", problem="x = 1\n"), 422, "exactly one of"),
            (CandidateIn(source="# ok\n", problem="raise ValueError('no')\n"), 422, "does not load"),
            (candidate("# ok\n", options=JudgingOptions(baselines=["fastest"])), 422, "unknown baseline"),
        ]
        for bad, status, said in cases:
            with pytest.raises(Refused) as refused:
                served.submit([candidate("# fine\n"), bad])
            assert refused.value.status == status and said in str(refused.value)
        assert store.runs(kind="serve") == [] or not any(
            store.candidates(r.id) for r in store.runs(kind="serve")
        )
        with pytest.raises(Refused) as missing:
            served.state(12345)
        assert missing.value.status == 404
    with service(store, Scripted(), accept_problems=False) as tasks_only:
        with pytest.raises(Refused) as refused:
            tasks_only.submit([CandidateIn(source="# ok\n", problem=(PROBLEMS / "add_small.py").read_text())])
        assert refused.value.status == 403


def test_a_problem_given_as_source_is_kept_by_the_server_and_judged(store: RunStore) -> None:
    lane = Scripted()
    source = (PROBLEMS / "add_small.py").read_text()
    with service(store, lane) as served:
        id = served.submit([CandidateIn(source="# ok\n", problem=source)])[0]
        state = finished(served, [id])[0]
    assert state.state is State.DONE and state.task.startswith("problem-")  # type: ignore[attr-defined]
    kept = list((store.path.parent / "serve-problems").glob("*.py"))
    assert [path.read_text() for path in kept] == [source]


def test_when_the_judge_itself_fails_the_submission_and_its_twin_fail_and_are_not_cached(
    store: RunStore,
) -> None:
    lane = Scripted()
    lane.released.clear()
    with service(store, lane) as served:
        ids = served.submit([candidate("# breaks\n"), candidate("# breaks\n")])
        lane.released.set()
        states = finished(served, ids)
        assert [s.state for s in states] == [State.FAILED, State.FAILED]  # type: ignore[attr-defined]
        assert "the reference worker died" in states[0].error  # type: ignore[attr-defined]
        again = served.submit([candidate("# breaks\n")])[0]
        assert finished(served, [again])[0].state is State.FAILED  # type: ignore[attr-defined]
        assert len(lane.judged) == 2, "a failure is no verdict to reuse"
        assert served.metrics().failed == 3


def test_cudasmith_reward_is_the_reward_export_writes() -> None:
    verdict = Verdict(Status.CORRECT, "fine", TASK, "a.py", "cpu", speedup=1.5)
    assert cudasmith.reward(verdict) == reward(verdict.to_dict()) == CORRECT_BONUS + 1.5
    verdict.status = Status.REJECTED
    assert cudasmith.reward(verdict) == 0.0
