"""The executor on the CPU: lanes fed by one queue (spread over sessions, kept on their own), builds
ahead that candidates wait for, a lane that replaces a broken session, a worker pinned to the GPU it
was given, and a build that really fills the cache its judged worker reads.

The scheduling tests use backends that judge nothing (they record what they were given); the build
tests start real sandboxed workers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar

import pytest

from cudasmith.errors import HarnessError, UsageError
from cudasmith.exec import Job, ProblemRef, check_executor, make_executor
from cudasmith.exec.base import Executor
from cudasmith.exec.lane import OPEN_SESSIONS, Lane
from cudasmith.exec.local import LocalExecutor
from cudasmith.exec.prebuild import BuildResult, build, needs_build
from cudasmith.harness.options import EvalOptions
from cudasmith.harness.verdict import Verdict
from cudasmith.harness.walls.environment import visible_gpu
from cudasmith.harness.wire.status import Status
from cudasmith.tasks.problem import Problem, load_problem

from conftest import PROBLEMS, SOLUTIONS

OPTIONS = EvalOptions(device="cpu", seeds_per_config=1, timing=False, seed=11)
ADD = load_problem(PROBLEMS / "add_small.py")
FAST = SOLUTIONS / "optimize" / "add_fast.py"


def job(key: str, problem: Problem = ADD, source: str | None = None) -> Job:
    text = source if source is not None else f"# candidate {key}\nclass ModelNew: pass\n"
    return Job(key, ProblemRef.of(problem), OPTIONS, text, f"{key}.py")


class Recording:
    """A lane that judges nothing: it notes which candidates it got. Given a barrier, each candidate waits
    there for the other lanes to be judging too; while `held`, each waits until the lane is closed."""

    def __init__(
        self, name: str, fail_on: str | None = None, barrier: threading.Barrier | None = None
    ) -> None:
        self.name = name
        self.fail_on = fail_on
        self.barrier = barrier
        self.released = threading.Event()
        self.released.set()
        self.got: list[str] = []
        self.closed = False

    def hold(self) -> None:
        """Candidates taken from now on wait until close()."""
        self.released.clear()

    def judge(self, job: Job) -> Verdict:
        if self.barrier is not None:
            self.barrier.wait(timeout=60)  # broken, and raising, unless every lane judges at once
        self.released.wait(timeout=60)
        self.got.append(job.key)
        if job.key == self.fail_on:
            raise HarnessError("the reference worker died")
        return Verdict(Status.CORRECT, "fine", job.problem.name, job.file_name, self.name)

    def counters(self) -> dict[str, int]:
        return {"sessions": 1, "restarts": 0}

    def close(self) -> None:
        self.closed = True
        self.released.set()


def other_problem(tmp_path: Path) -> Problem:
    copy = tmp_path / "add_copy.py"
    copy.write_text(ADD.source + "\n# another task\n")
    return load_problem(copy)


def test_lanes_spread_over_sessions_and_keep_their_own(tmp_path: Path) -> None:
    """Two tasks, two lanes: each lane opens one task's session and stays with it."""
    second = other_problem(tmp_path)
    # Lanes in step (each candidate waits for the other lane's), so that neither takes both tasks' work.
    in_step = threading.Barrier(2)
    lanes = [Recording("lane-a", barrier=in_step), Recording("lane-b", barrier=in_step)]
    with Executor(lanes) as executor:  # type: ignore[arg-type]
        jobs = [job(f"a{i}") for i in range(4)] + [job(f"b{i}", second) for i in range(4)]
        futures = [executor.submit(j) for j in jobs]
        verdicts = [f.result(timeout=30) for f in futures]
        stats = executor.stats()
    assert all(v.status == Status.CORRECT for v in verdicts)
    assert sorted(lanes[0].got + lanes[1].got) == sorted(j.key for j in jobs), "each judged once"
    assert {k[0] for k in lanes[0].got} != {k[0] for k in lanes[1].got}, "one task per lane"
    assert all(len({k[0] for k in lane.got}) == 1 for lane in lanes)
    assert [lane.judged for lane in stats.lanes] == [4, 4] and all(lane.closed for lane in lanes)
    assert 0 < stats.busy_fraction <= 1 and stats.ready == 0  # type: ignore[operator]


def test_one_task_keeps_every_lane_busy() -> None:
    # Each judgement waits until the other lane judges too: only lanes judging side by side finish.
    together = threading.Barrier(2)
    lanes = [Recording("lane-a", barrier=together), Recording("lane-b", barrier=together)]
    with Executor(lanes) as executor:  # type: ignore[arg-type]
        for future in [executor.submit(job(str(i))) for i in range(6)]:
            assert future.result(timeout=120).status == Status.CORRECT
        stats = executor.stats()
    assert [len(lane.got) for lane in lanes] == [3, 3]
    assert [lane.judged for lane in stats.lanes] == [3, 3]


def test_the_judges_own_failure_reaches_whoever_waits_and_close_cancels_the_queue() -> None:
    lane = Recording("lane", fail_on="bad")
    executor = Executor([lane])  # type: ignore[list-item]
    bad, good = executor.submit(job("bad")), executor.submit(job("good"))
    with pytest.raises(HarnessError, match="reference worker died"):
        bad.result(timeout=30)
    assert good.result(timeout=30).status == Status.CORRECT
    lane.hold()  # the lane takes at most one of these, and keeps it until closed
    queued = [executor.submit(job(f"q{i}")) for i in range(20)]
    executor.close()
    assert sum(f.cancelled() for f in queued) >= 19 and lane.closed
    with pytest.raises(RuntimeError, match="closed"):
        executor.submit(job("late"))


def test_a_candidate_waits_for_its_build_and_is_built_once() -> None:
    gate = threading.Event()
    built: list[str] = []

    def builder(j: Job) -> BuildResult:
        built.append(j.key)
        gate.wait(30)
        return BuildResult(True, 0.5)

    lane = Recording("lane")
    compiled = job("k", source='add = compile_c(SOURCE, "add")\nclass ModelNew: pass\n')
    with Executor([lane], builder, build_workers=2) as executor:  # type: ignore[list-item]
        executor.prebuild(compiled)
        future = executor.submit(compiled)
        plain = executor.submit(job("plain"))
        assert plain.result(timeout=30).status == Status.CORRECT, "one that needs no build goes first"
        assert not future.done() and executor.stats().waiting_for_build == 1
        gate.set()
        assert future.result(timeout=30).status == Status.CORRECT
        stats = executor.stats()
    assert built == ["k"] and lane.got == ["plain", "k"]
    assert (stats.built, stats.build_failed, stats.build_s) == (1, 0, 0.5)


class BrokenOnce:
    """A judge session whose reference dies on its first candidate (a session of the lane's factory)."""

    opened = 0

    def __init__(self, problem: Problem, options: EvalOptions) -> None:
        BrokenOnce.opened += 1
        self.first = BrokenOnce.opened == 1
        self.device = options.device

    def __enter__(self) -> BrokenOnce:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None

    def judge(self, path: Path) -> Verdict:
        if self.first:
            raise HarnessError("the reference failed while comparing outputs: CUDA error: an illegal address")
        return Verdict(Status.CORRECT, "fine", "add_small", str(path), self.device)


def test_a_lane_replaces_a_broken_session_and_judges_the_candidate_again() -> None:
    BrokenOnce.opened = 0
    lane = Lane("cpu", BrokenOnce)  # type: ignore[arg-type]
    try:
        verdict = lane.judge(job("c", source=FAST.read_text()))
        again = lane.judge(job("d", source=FAST.read_text()))
    finally:
        lane.close()
    assert verdict.status == Status.CORRECT and again.status == Status.CORRECT
    assert (lane.restarts, lane.sessions_opened, BrokenOnce.opened) == (1, 2, 2)


def test_a_worker_sees_the_gpu_of_its_lane_through_the_parents_own_mask() -> None:
    assert visible_gpu(1, None) == "1" and visible_gpu(0, "") == "0"
    assert visible_gpu(1, "2,3") == "3", "cuda:1 of a process that sees GPUs 2 and 3 is GPU 3"
    assert visible_gpu(0, "GPU-8a1b") == "GPU-8a1b"
    with pytest.raises(UsageError, match="not visible"):
        visible_gpu(2, "2,3")


def test_bad_choices_of_lanes_are_one_line_errors() -> None:
    with pytest.raises(UsageError, match="unknown executor 'slurm'"):
        check_executor("slurm", "cpu")
    with pytest.raises(UsageError, match="--address is the Ray cluster's"):
        check_executor("local", "cpu", address="10.0.0.1:6379")
    with pytest.raises(UsageError, match="--gpus needs a CUDA device"):
        check_executor("local", "cpu", gpus="2")
    with pytest.raises(UsageError, match="places lanes itself"):
        check_executor("ray", "cuda:1")
    with pytest.raises(UsageError, match="a count"):
        check_executor("ray", "cuda", gpus="0,1")
    assert check_executor("local", "cpu") == ["cpu"]


def test_gpus_name_a_count_or_indices(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    import cudasmith.device

    monkeypatch.setattr(cudasmith.device, "usable_device", lambda device=None: device)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    assert check_executor("local", "cuda") == ["cuda:0", "cuda:1", "cuda:2", "cuda:3"]
    assert check_executor("local", "cuda", gpus="2") == ["cuda:0", "cuda:1"]
    assert check_executor("local", "cuda", gpus="1,3") == ["cuda:1", "cuda:3"]
    assert check_executor("local", "cuda:2") == ["cuda:2"]
    for bad in ("5", "0", "1,1", "1,7", "two"):
        with pytest.raises(UsageError):
            check_executor("local", "cuda", gpus=bad)


@pytest.mark.slow
def test_a_build_fills_the_cache_that_the_judged_worker_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A C kernel built ahead in a sandboxed CPU worker: its library is in the solution's sealed build
    folder afterwards, and the judged candidate, in a session of its own, is correct."""
    monkeypatch.setenv("CUDASMITH_CACHE", str(tmp_path / "cache"))
    source = FAST.read_text()
    assert needs_build(source) and not needs_build("class ModelNew: pass\n")
    result = build(job("fast", source=source), tmp_path / "scratch", None)
    assert result.ok, result.reason
    from cudasmith.harness.walls.scratch import folder_intact
    from cudasmith.runtime.cache import extension_root

    built = extension_root(source)
    assert list((built / "_cpu").glob("*.so")), "the library is in the solution's own build folder"
    assert folder_intact(built), "and the folder is sealed by the parent"
    failed = build(job("broken", source=(SOLUTIONS / "c_compile_error.py").read_text()), tmp_path, None)
    assert not failed.ok and "error" in failed.reason
    with make_executor("local", "cpu", build_workers=1) as executor:
        verdict = executor.submit(job("fast", source=source)).result(timeout=300)
        stats = executor.stats()
    assert verdict.status == Status.CORRECT, verdict.reason
    assert stats.built == 1 and stats.lanes[0].judged == 1


@pytest.mark.slow
def test_each_solution_builds_torch_extensions_in_a_folder_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two solutions that name their extension alike cannot load each other's library."""
    from cudasmith.runtime.cache import extension_root

    monkeypatch.setenv("CUDASMITH_CACHE", str(tmp_path / "cache"))
    printing = (SOLUTIONS / "vector_add_cpu.py").read_text() + (
        "\nimport os\nprint('extensions in', os.environ['TORCH_EXTENSIONS_DIR'])\n"
    )
    solution = tmp_path / "prints.py"
    solution.write_text(printing)
    import cudasmith

    verdict = cudasmith.evaluate(solution, task="level1/vector_add", options=OPTIONS)
    assert f"extensions in {extension_root(printing)}" in verdict.artifacts.get("stdout", "")
    assert extension_root(printing) != extension_root(printing + "\n")


class CountingJudge:
    """The real judge, counting the solution files each session was given."""

    judged: ClassVar[list[str]] = []
    lock = threading.Lock()

    def __init__(self, problem: Problem, options: EvalOptions) -> None:
        from cudasmith.harness.session import Judge

        self.judge_session = Judge(problem, options)

    def __enter__(self) -> CountingJudge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.judge_session.close()

    def judge(self, path: Path) -> Verdict:
        with self.lock:
            self.judged.append(path.name)
        return self.judge_session.judge(path)


@pytest.mark.slow
def test_two_lanes_finish_a_batch_of_every_outcome_judging_each_candidate_once() -> None:
    """Correct, wrong, a crash, a build ahead and a hang, twice each, over two lanes of real sessions:
    every candidate gets its status, none is judged twice, none is lost."""
    hang_limit = EvalOptions(device="cpu", seeds_per_config=1, timing=False, seed=11, call_timeout_s=3.0)
    expected = {
        "optimize/add_fast.py": Status.CORRECT,
        "optimize/add_wrong.py": Status.INCORRECT,
        "segfaults.py": Status.RUNTIME_ERROR,
        "vector_add_cpu.py": Status.CORRECT,  # compile_c: built ahead
        "loops_forever.py": Status.TIMEOUT,
    }
    jobs = [
        Job(
            f"{round_}/{name}",
            ProblemRef.of(ADD),
            hang_limit,
            (SOLUTIONS / name).read_text(),
            Path(name).name,
            str(SOLUTIONS / name),
        )
        for round_ in range(2)
        for name in expected
    ]
    CountingJudge.judged = []
    with LocalExecutor(["cpu", "cpu"], build_workers=1, factory=CountingJudge) as executor:
        futures = {job.key: executor.submit(job) for job in jobs}
        statuses = {key: future.result(timeout=600).status for key, future in futures.items()}
        stats = executor.stats()
    assert statuses == {job.key: expected[job.key.partition("/")[2]] for job in jobs}
    assert sorted(CountingJudge.judged) == sorted(Path(name).name for name in expected for _ in range(2))
    assert [lane.judged > 0 for lane in stats.lanes] == [True, True]
    assert sum(lane.judged for lane in stats.lanes) == len(jobs) and stats.built >= 1


def test_a_lane_judges_its_candidates_in_flight_at_once() -> None:
    # Each judgement waits until another of the same lane judges too: only candidates in flight finish.
    together = threading.Barrier(2)
    lane = Recording("lane", 0.0, barrier=together)
    with Executor([lane], in_flight=2) as executor:  # type: ignore[list-item]
        assert executor.slots == 2
        for future in [executor.submit(job(str(i))) for i in range(4)]:
            assert future.result(timeout=120).status == Status.CORRECT
        stats = executor.stats()
    assert sorted(lane.got) == ["0", "1", "2", "3"] and stats.lanes[0].judged == 4
    assert stats.lanes[0].judging == 0 and stats.busy_fraction is not None


class Gated:
    """A session whose judgements wait at a gate; it notes a close that came while one was under way."""

    gate = threading.Event()
    opened: ClassVar[list[Gated]] = []

    def __init__(self, problem: Problem, options: EvalOptions) -> None:
        self.busy = 0
        self.closed_while_busy = False
        self.in_flight = options.in_flight
        Gated.opened.append(self)

    def __enter__(self) -> Gated:
        return self

    def __exit__(self, *exc: object) -> None:
        self.closed_while_busy = self.closed_while_busy or self.busy > 0

    def judge(self, path: Path) -> Verdict:
        self.busy += 1
        Gated.gate.wait(60)
        self.busy -= 1
        return Verdict(Status.CORRECT, "fine", "add_small", str(path), "cpu")


def _problem_copy(tmp_path: Path, name: str) -> Problem:
    copy = tmp_path / f"add_{name}.py"
    copy.write_text(ADD.source + f"\n# task {name}\n")
    return load_problem(copy)


def _wait_for(condition: Callable[[], object], deadline: float) -> None:
    while not condition():
        assert time.monotonic() < deadline
        threading.Event().wait(0.01)


def test_a_lane_opens_another_problems_session_while_the_first_judges_and_closes_none_busy(
    tmp_path: Path,
) -> None:
    Gated.gate.clear()
    Gated.opened = []
    lane = Lane("cpu", Gated, in_flight=3)  # type: ignore[arg-type]
    verdicts: list[Verdict] = []
    problems = [_problem_copy(tmp_path, name) for name in "bc"]
    deadline = time.monotonic() + 60
    try:
        threads = [threading.Thread(target=lambda j=j: verdicts.append(lane.judge(j)))
                   for j in (job("a"), job("b", problems[0]), job("c", problems[1]))]  # fmt: skip
        threads[0].start()
        _wait_for(lambda: Gated.opened and Gated.opened[0].busy, deadline)
        threads[1].start()  # another problem: its session opens while the first one's candidate is judged
        _wait_for(lambda: len(Gated.opened) == 2 and Gated.opened[1].busy, deadline)
        assert OPEN_SESSIONS == 2
        threads[2].start()  # a third: two are open and judging, so it waits for one to be done
        _wait_for(lambda: lane._cond._waiters, deadline)  # type: ignore[attr-defined]
        assert len(Gated.opened) == 2 and len(lane.sessions) == 2
        Gated.gate.set()
        for thread in threads:
            thread.join(60)
    finally:
        lane.close()
    assert [v.status for v in verdicts] == [Status.CORRECT] * 3 and len(Gated.opened) == 3
    assert lane.sessions_opened == 3
    assert not any(session.closed_while_busy for session in Gated.opened)
    assert Gated.opened[0].in_flight == 3, "the lane's count reaches the session's options"


def test_a_lane_judges_a_problem_again_in_its_open_session(tmp_path: Path) -> None:
    Gated.gate.set()
    Gated.opened = []
    lane = Lane("cpu", Gated)  # type: ignore[arg-type]
    second = _problem_copy(tmp_path, "b")
    try:
        statuses = [lane.judge(j).status for j in (job("a"), job("b", second), job("c"), job("d", second))]
    finally:
        lane.close()
    assert statuses == [Status.CORRECT] * 4
    assert len(Gated.opened) == 2, "two problems, one session each: both stay open"


def _real_judges() -> tuple[list[Any], Callable[[Problem, EvalOptions], Any]]:
    """The judge sessions a factory opened (the real Judge), and the factory."""
    from cudasmith.harness.session import Judge

    opened: list[Any] = []

    def factory(problem: Problem, options: EvalOptions) -> Any:
        opened.append(Judge(problem, options))
        return opened[-1]

    return opened, factory


def _quick_add() -> tuple[EvalOptions, str]:
    """Options that judge add_small quickly on the CPU (no timing), and an honest solution's source."""
    quick = EvalOptions(device="cpu", seeds_per_config=1, timing=False, seed=5)
    return quick, (SOLUTIONS / "optimize" / "add_fast.py").read_text()


def test_a_session_starts_no_more_workers_ahead_than_the_executor_has_candidates_for_it() -> None:
    """Three candidates of one problem, three in flight: the executor tells the lane how many are queued
    behind each, and the session starts a worker for each and keeps only its floor of one ahead after
    the last; by its own count it would start three ahead and top them up after every take (six)."""
    opened, factory = _real_judges()
    quick, source = _quick_add()
    jobs = [Job(f"c{i}", ProblemRef.of(ADD), quick, f"# copy {i}\n{source}", f"c{i}.py") for i in range(3)]
    with LocalExecutor(["cpu"], build_workers=0, factory=factory, in_flight=3) as executor:
        futures = [executor.submit(j) for j in jobs]
        assert [f.result(timeout=300).status for f in futures] == [Status.CORRECT] * 3
        assert len(opened) == 1
        judge = opened[0]
        assert judge.options.warm_floor() == 1 and judge.pool.size == 1, "none waits: the floor"
        assert judge.pool.started <= 3 + 1, "one worker per candidate, and the floor's one ahead"


def test_a_session_opened_for_a_lone_candidate_keeps_more_ahead_once_more_wait() -> None:
    """A service queues candidates one by one, so the executor may hand out a problem's first before the
    rest are queued: its session opens with one worker ahead. When more wait for it later, it keeps as many
    ahead as its own count allows (it used to keep one for its whole life, whatever was in flight)."""
    opened, factory = _real_judges()
    quick, source = _quick_add()
    lane = Lane("cpu", factory, in_flight=3)
    try:
        lone = Job("c0", ProblemRef.of(ADD), quick, source, "c0.py", queued_alike=0, handed_out=1)
        assert lane.judge(lone).status == Status.CORRECT
        judge = opened[0]
        assert judge.options.warm_workers == 1 and judge.pool.size == 1, "opened for the one candidate"
        later = Job("c1", ProblemRef.of(ADD), quick, f"# 1\n{source}", "c1.py", queued_alike=5, handed_out=2)
        assert lane.judge(later).status == Status.CORRECT
        assert len(opened) == 1 and judge.pool.size == 3, "five wait: as many ahead as three in flight"
    finally:
        lane.close()


def test_a_session_heeds_the_latest_count_of_candidates_waiting_for_it() -> None:
    from cudasmith.harness.session import Judge

    with Judge(load_problem(PROBLEMS / "add_small.py"), EvalOptions(device="cpu", in_flight=4)) as judge:
        assert judge.pool.size == 4
        judge.expect(2, order=5)
        assert judge.pool.size == 2
        judge.expect(3, order=4)  # counted before the last: stale
        assert judge.pool.size == 2
        judge.expect(0, order=6)
        assert judge.pool.size == 1, "the floor stays ahead for candidates to come"
        judge.expect(9, order=7)
        assert judge.pool.size == 4, "never beyond the session's own count"


def test_executor_statistics_read_back_from_a_summary_say_the_same() -> None:
    """A run's stored summary keeps the statistics as JSON; `report` reads them back and prints them again:
    the busy shares are those of the rounded times, or 0.7569 would come back as 0.757."""
    from cudasmith.exec import ExecutorStats, LaneStats

    lanes = [LaneStats("cpu", judged=1, busy_s=7.5349, sessions=1)]
    stats = ExecutorStats("local", lanes, 9.9544, building=0, waiting_for_build=0, ready=0, max_ready=1)
    stored = stats.to_dict()
    assert ExecutorStats.from_dict(stored).to_dict() == stored
    assert stored["busy_fraction"] == round(7.535 / 9.954, 4)
