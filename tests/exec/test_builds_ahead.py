"""Builds ahead for the solutions one session is given (exec/ahead.py): extension builds first, a solution
judged while another's extension builds, verdicts in the order given; and `cudasmith eval` of several C
solutions on the CPU, one of them waited for."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cudasmith.exec import ahead
from cudasmith.exec.jobs import Job, ProblemRef
from cudasmith.exec.prebuild import BuildResult
from cudasmith.harness.options import EvalOptions

from conftest import PROBLEMS, SOLUTIONS, run_cli

# What each made-up solution's source says: an extension (waited for), a C kernel (built ahead, not
# waited for) or nothing to build.
SOURCES = {
    "extension.py": "from torch.utils.cpp_extension import load_inline\n",
    "plain.py": "import torch\n",
    "c_kernel.py": "from cudasmith.runtime import compile_c\nkernel = compile_c(SOURCE, 'k')\n",
    "later.py": "import torch  # nothing to build\n",
}


class FakeJudge:
    """Judges lazily, one solution at a time (Judge.judge_as_done judges K at once); the extension's build finishes
    while `finish_on` is being judged."""

    def __init__(self, problem: Path, finish_on: str, finished: threading.Event) -> None:
        self.problem = SimpleNamespace(name="made-up", path=problem, source=problem.read_text())
        self.options = EvalOptions(device="cpu")
        self.judged: list[str] = []
        self.finish_on, self.finished = finish_on, finished
        self.timed_ahead = threading.Event()

    def time_ahead(self) -> None:
        self.timed_ahead.set()

    def judge_as_done(self, solutions: Iterable[Path]) -> Iterator[tuple[int, Any]]:
        for position, path in enumerate(solutions):
            self.judged.append(path.name)
            if path.name == self.finish_on:
                self.finished.set()
            yield position, SimpleNamespace(solution=path.name)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for name, source in SOURCES.items():
        (tmp_path / name).write_text(source)
    (tmp_path / "problem.py").write_text("# a made-up problem\n")
    return tmp_path


def test_ready_solutions_go_first_and_verdicts_come_in_the_order_given(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    finished = threading.Event()
    built: list[str] = []

    def fake_build(job: Job, scratch: Path, target: str | None) -> BuildResult:
        built.append(job.file_name)
        if "load_inline" in job.source:
            assert finished.wait(30), "the judge never got to the solution it could judge meanwhile"
        return BuildResult(True, 0.0)

    monkeypatch.setattr(ahead, "build", fake_build)
    judge = FakeJudge(folder / "problem.py", "later.py", finished)
    given = [folder / name for name in SOURCES]
    verdicts = list(ahead.judge_built_ahead(judge, given, workers=1))  # type: ignore[arg-type]
    assert [v.solution for v in verdicts] == list(SOURCES), "verdicts in the order given"
    assert judge.judged == ["plain.py", "c_kernel.py", "later.py", "extension.py"]
    # Extension builds first; the C kernel's comes next (unless the session ended first); nothing else.
    assert built[0] == "extension.py" and set(built) <= {"extension.py", "c_kernel.py"}, built


def test_the_session_says_when_it_waits_for_a_build(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    finished = threading.Event()
    monkeypatch.setattr(ahead, "build", lambda job, *_: BuildResult(finished.wait(30), 0.0))
    judge = FakeJudge(folder / "problem.py", "", finished)
    said: list[tuple[str, int, int]] = []

    def progress(what: str, done: int, total: int) -> None:
        said.append((what, done, total))
        finished.set()  # the extension's build ends only once the session said it waits for it

    judge.progress = progress  # type: ignore[attr-defined]
    given = [folder / name for name in SOURCES]
    assert [v.solution for v in ahead.judge_built_ahead(judge, given, workers=2)] == list(SOURCES)  # type: ignore[arg-type]
    assert said == [("waiting for 1 build ahead", 3, 4)]
    assert judge.judged[-1] == "extension.py"
    assert judge.timed_ahead.wait(30), "the session timed nothing while the queue waited for a build"


def test_without_build_workers_nothing_is_built_or_reordered(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ahead, "build", lambda *args: pytest.fail("no build was asked for"))
    judge = FakeJudge(folder / "problem.py", "", threading.Event())
    given = [folder / name for name in SOURCES]
    verdicts = [v.solution for v in ahead.judge_built_ahead(judge, given, workers=0)]  # type: ignore[arg-type]
    assert verdicts == judge.judged == list(SOURCES)
    assert not judge.timed_ahead.is_set(), "nothing was waited for: the candidates' own holds time"


def test_a_lone_solution_builds_ahead_only_an_extension(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []

    def fake_build(job: Job, scratch: Path, target: str | None) -> BuildResult:
        built.append(job.file_name)
        return BuildResult(True, 0.0)

    monkeypatch.setattr(ahead, "build", fake_build)
    for name in ("c_kernel.py", "extension.py"):
        judge = FakeJudge(folder / "problem.py", "", threading.Event())
        verdicts = list(ahead.judge_built_ahead(judge, [folder / name], workers=1))  # type: ignore[arg-type]
        assert [v.solution for v in verdicts] == [name]
    assert built == ["extension.py"], (
        "a C kernel alone compiles in its judged worker, which nothing waits for"
    )


@pytest.mark.slow
def test_eval_of_several_solutions_builds_them_ahead_and_answers_in_order(tmp_path: Path) -> None:
    honest = (SOLUTIONS / "vector_add_cpu.py").read_text()
    # The comment makes the build one the session waits for (an extension's, as far as it knows).
    waited = tmp_path / "a_waited.py"
    waited.write_text("# built like a load_inline extension: judged once its build is done\n" + honest)
    plain = tmp_path / "b_plain.py"
    plain.write_text("# built ahead, not waited for\n" + honest)
    wrong = SOLUTIONS / "vector_add_misses_tail.py"
    options = ["--task", "level1/vector_add", "--device", "cpu", "--seeds", "1", "--no-timing", "--json"]
    done = run_cli("eval", str(waited), str(wrong), str(plain), *options)
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert [Path(v["solution"]).name for v in verdicts] == ["a_waited.py", wrong.name, "b_plain.py"], (
        done.stderr
    )
    assert [v["status"] for v in verdicts] == ["correct", "incorrect", "correct"], done.stdout
    assert done.returncode == 1


@pytest.mark.parametrize("user_list", [None, "9.0a"])
def test_a_build_worker_and_the_judged_worker_build_for_the_same_targets(
    user_list: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch rebuilds an extension whose flags changed: on the H100, a user's TORCH_CUDA_ARCH_LIST of 9.0a
    against the build worker's 9.0 built every load_inline solution twice, ahead and again when judged."""
    from cudasmith.exec.prebuild import build_environment
    from cudasmith.harness.workers.candidate import set_build_environment
    from cudasmith.runtime import nvcc_phases
    from cudasmith.runtime.arch import ARCH_ENV
    from cudasmith.runtime.cache import BUILD_DIR_ENV

    for name in ("TORCH_EXTENSIONS_DIR", BUILD_DIR_ENV, "TRITON_CACHE_DIR"):
        monkeypatch.setenv(name, str(tmp_path / name))
    if user_list is None:
        monkeypatch.delenv("TORCH_CUDA_ARCH_LIST", raising=False)
    else:
        monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", user_list)
    monkeypatch.setenv("PYTORCH_NVCC", "restored afterwards")
    monkeypatch.delenv("PYTORCH_NVCC")  # the user named no nvcc
    ahead_list = build_environment("sm_90a")["TORCH_CUDA_ARCH_LIST"]
    # The judged worker, on an H100 (its target named, so that no GPU is needed here).
    monkeypatch.setenv(ARCH_ENV, "sm_90a")
    set_build_environment(tmp_path / "build", "cuda")
    assert os.environ["TORCH_CUDA_ARCH_LIST"] == ahead_list == (user_list or "9.0")
    # The same nvcc in both (set by this same function in the build worker): a changed compile command
    # also makes torch's ninja build again.
    assert os.environ["PYTORCH_NVCC"] == nvcc_phases.command()


def test_only_a_head_start_build_gives_the_cpu_to_the_judged_workers_first(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An NVRTC or C build ahead runs at a lower priority than the judged workers; an extension build,
    which its solution waits for, does not."""
    from cudasmith.exec import prebuild
    from cudasmith.harness import builds
    from cudasmith.harness.walls.supervisor import NICE_ENV

    given: dict[str, dict[str, str]] = {}

    def fake_build_ahead(
        problem_file: Path, solution: Path, env: dict[str, str], timeout_s: float, lease: Any = None
    ) -> tuple[bool, str]:
        given[solution.name] = env
        return True, ""

    monkeypatch.setattr(builds, "build_ahead", fake_build_ahead)
    problem = ProblemRef("add_small", str(PROBLEMS / "add_small.py"), (PROBLEMS / "add_small.py").read_text())
    for name in ("extension.py", "c_kernel.py"):
        job = Job(name, problem, EvalOptions(device="cpu"), SOURCES[name], name, str(folder / name))
        prebuild.build(job, folder / "scratch", None)
    assert NICE_ENV not in given["extension.py"]
    assert given["c_kernel.py"][NICE_ENV] == str(prebuild.HEAD_START_NICE)


def test_a_worker_told_a_niceness_runs_at_it_with_what_it_starts() -> None:
    from cudasmith.harness.walls.process import WorkerProcess
    from cudasmith.harness.walls.supervisor import NICE_ENV
    from cudasmith.harness.wire.messages import WorkerSetup

    setup = WorkerSetup("candidate", str(PROBLEMS / "add_small.py"), "cpu", defences=False)
    worker = WorkerProcess(setup, env={NICE_ENV: "7"})
    try:
        pid = worker.wait_started()
        assert pid is not None
        assert os.getpriority(os.PRIO_PROCESS, pid) == os.getpriority(os.PRIO_PROCESS, 0) + 7
    finally:
        worker.close()


# A build that compiles at import for a few seconds (a busy loop in its place), then defines ModelNew.
BUSY_BUILD = """import time
started = time.monotonic()
while time.monotonic() - started < 4.0:
    pass

class ModelNew:
    pass
"""


def test_on_the_cpu_a_build_ahead_gives_way_to_every_timing_window(tmp_path: Path) -> None:
    """Candidates judged on the CPU share it with the builds ahead: a build is a worker of the CPU's lease,
    paused by a hold like a candidate's (its compiler too), so a window does not share the CPU with it;
    its time limit waits meanwhile, and it finishes afterwards."""
    from cudasmith.harness.builds import build_ahead
    from cudasmith.harness.lease import TimingLease
    from cudasmith.harness.walls.process import WorkerProcess
    from cudasmith.harness.wire.messages import Ping, WorkerSetup

    solution = tmp_path / "busy_build.py"
    solution.write_text(BUSY_BUILD)
    lease = TimingLease(gpu=False)
    built: list[tuple[bool, str]] = []
    building = threading.Thread(
        target=lambda: built.append(build_ahead(PROBLEMS / "add_small.py", solution, {}, 60.0, lease))
    )
    timed = WorkerProcess(WorkerSetup("candidate", str(PROBLEMS / "add_small.py"), "cpu", defences=False))
    try:
        timed.request(Ping(), 120, "starting")
        building.start()
        deadline = time.monotonic() + 60
        while not lease._alive(trusted=False):
            assert time.monotonic() < deadline, "the build never started"
            time.sleep(0.01)
        build = lease._alive(trusted=False)[0]
        with lease.hold() as hold:
            assert build.paused and build.stopped
            _, window = hold.window(timed, lambda: time.sleep(1.0))
        assert window.exclusive and window.retimed == 0, window.others
        building.join(120)
        assert built == [(True, "")]
        assert build.paused_s() >= 1.0
    finally:
        timed.close()


def test_only_builds_for_the_cpu_are_workers_of_its_lease(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cudasmith.exec import prebuild
    from cudasmith.harness import builds
    from cudasmith.harness.lease import lease_for

    leases: dict[str | None, Any] = {}

    def fake_build_ahead(
        problem_file: Path, solution: Path, env: dict[str, str], timeout_s: float, lease: Any = None
    ) -> tuple[bool, str]:
        leases[env.get("CUDASMITH_ARCH")] = lease
        return True, ""

    monkeypatch.setattr(builds, "build_ahead", fake_build_ahead)
    monkeypatch.setattr(prebuild, "build_environment", lambda target, head_start: {"CUDASMITH_ARCH": target})
    problem = ProblemRef("add_small", str(PROBLEMS / "add_small.py"), (PROBLEMS / "add_small.py").read_text())
    job = Job("c_kernel.py", problem, EvalOptions(device="cpu"), SOURCES["c_kernel.py"], "c_kernel.py", "x")
    prebuild.build(job, folder / "scratch", None)
    prebuild.build(job, folder / "scratch", "sm_90a")
    assert leases == {None: lease_for("cpu"), "sm_90a": None}
