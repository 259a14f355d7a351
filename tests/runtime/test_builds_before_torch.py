"""Builds sent before the process imports torch (exec.ahead.builds_before_loading): the modules that send
them import no torch, the first build worker starts before torch is imported, the problem as read equals
the problem as loaded, and builds sent for a guessed device are used only where the guess held."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cudasmith import hardware
from cudasmith.errors import UsageError
from cudasmith.exec import ahead, prebuild
from cudasmith.exec.jobs import ProblemRef
from cudasmith.harness.options import EvalOptions
from cudasmith.runtime import arch
from cudasmith.tasks.problem import load_problem, load_task, task_path

from conftest import PROBLEMS, SOLUTIONS

# What a command imports before it sends its builds, and what sending them imports.
TORCH_FREE = (
    "cudasmith.commands.eval",
    "cudasmith.exec",
    "cudasmith.exec.ahead",
    "cudasmith.exec.prebuild",
    "cudasmith.harness.builds",
    "cudasmith.harness.options",
    "cudasmith.harness.walls.process",
    "cudasmith.runtime",
    "cudasmith.runtime.arch",
)

# Sends the builds of the files named on the command line for level1/vector_add on the CPU, and says
# whether torch was imported when each build worker started.
SEND = """
import json, sys, time
from pathlib import Path
from cudasmith.harness.walls import process

at_start = []
original = process.WorkerProcess.__init__

def noting(self, *args, **kwargs):
    at_start.append("torch" in sys.modules)
    original(self, *args, **kwargs)

process.WorkerProcess.__init__ = noting
from cudasmith.exec.ahead import builds_before_loading
from cudasmith.tasks.problem import task_path

solutions = [Path(p) for p in sys.argv[1:]]
pool = builds_before_loading(task_path("level1/vector_add"), "level1/vector_add", "cpu", solutions)
deadline = time.monotonic() + 120
while len(pool.results) < len(solutions) and time.monotonic() < deadline:
    time.sleep(0.05)
results = list(pool.results.values())
pool.close()
print(json.dumps({"at_start": at_start, "ok": [r.ok for r in results], "why": [r.reason for r in results]}))
"""


def test_the_modules_that_send_builds_import_no_torch() -> None:
    code = f"import sys\nfor name in {TORCH_FREE!r}:\n    __import__(name)\nprint('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False", "a module that sends builds ahead imports torch"


@pytest.mark.slow
def test_the_first_build_worker_starts_before_torch_is_imported(tmp_path: Path) -> None:
    honest = (SOLUTIONS / "vector_add_cpu.py").read_text()
    files = []
    for name in ("a.py", "b.py"):  # two sources: a lone C solution is left to its judged worker
        files.append(tmp_path / name)
        files[-1].write_text(f"# {name}\n{honest}")
    done = subprocess.run(
        [sys.executable, "-c", SEND, *map(str, files)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.splitlines()[-1])
    assert said["ok"] == [True, True], said["why"]
    # One build worker on two cores: the second starts once the first is done, when torch may be in.
    assert said["at_start"][0] is False, "the first build waited for this process to import torch"


def test_a_problem_read_is_the_problem_loaded() -> None:
    assert ProblemRef.from_file(task_path("level1/softmax"), "level1/softmax") == ProblemRef.of(
        load_task("level1/softmax")
    )
    path = PROBLEMS / "add_small.py"
    assert ProblemRef.from_file(path) == ProblemRef.of(load_problem(path))


def test_builds_sent_early_are_used_only_for_the_problem_and_device_they_were_made_for(
    tmp_path: Path,
) -> None:
    path = tmp_path / "add_small.py"
    path.write_text((PROBLEMS / "add_small.py").read_text())
    pool = ahead.BuildsAhead(ProblemRef.from_file(path), EvalOptions(device="cpu"), workers=0)
    loaded = load_problem(path)
    assert pool.serves(loaded, EvalOptions(device="cpu"))
    path.write_text(path.read_text() + "\n# changed after the builds were sent\n")
    assert not pool.serves(load_problem(path), EvalOptions(device="cpu"))
    on_gpu = ahead.BuildsAhead(ProblemRef.from_file(path), EvalOptions(device="cpu"), workers=0)
    on_gpu.target = "sm_90a"  # as sent for a GPU that the judge then did not use
    assert not on_gpu.serves(load_problem(path), EvalOptions(device="cpu"))


def test_a_gpu_target_comes_from_the_driver_or_else_from_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(arch.ARCH_ENV, raising=False)
    monkeypatch.setattr(arch, "device_arch", lambda index: f"from torch, GPU {index}")
    answers = {"major": 9, "minor": 0}
    monkeypatch.setattr(hardware, "driver_attributes", lambda index, wanted: dict(answers))
    assert arch.gpu_target(0) == "sm_90a"
    answers.update(major=8, minor=6)
    assert prebuild.build_target(["cuda:1"]) == "sm_86"
    answers.clear()  # no cuda-python, or a driver that does not answer
    assert arch.gpu_target(1) == "from torch, GPU 1"
    monkeypatch.setenv(arch.ARCH_ENV, "sm_100a")
    assert arch.gpu_target(0) == "sm_100a"
    assert prebuild.build_target(["cpu"]) is None


def test_mixed_gpus_build_nothing_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(arch.ARCH_ENV, raising=False)
    capability = {0: {"major": 9, "minor": 0}, 1: {"major": 8, "minor": 0}}
    monkeypatch.setattr(hardware, "driver_attributes", lambda index, wanted: capability[index])
    with pytest.raises(UsageError, match="the GPUs differ"):
        prebuild.build_target(["cuda:0", "cuda:1"])


@pytest.mark.parametrize(
    ("named", "seen", "guessed"),
    [("cuda:1", None, "cuda:1"), ("cpu", 4, "cpu"), (None, 2, "cuda"), (None, 0, "cpu"), (None, None, None)],
)
def test_the_device_before_torch_is_the_one_named_or_what_the_driver_sees(
    named: str | None, seen: int | None, guessed: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hardware, "driver_gpu_count", lambda: seen)
    assert prebuild.device_before_torch(named) == guessed


def test_no_builds_go_early_where_the_device_cannot_be_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hardware, "driver_gpu_count", lambda: None)
    solution = tmp_path / "s.py"
    solution.write_text("from torch.utils.cpp_extension import load_inline\n")
    assert ahead.builds_before_loading(PROBLEMS / "add_small.py", None, None, [solution]) is None


def test_eval_sends_early_only_for_a_task_or_problem_file_it_can_read(tmp_path: Path) -> None:
    from cudasmith.commands.eval import _early_builds

    solution = tmp_path / "s.py"
    solution.write_text("import torch\n")  # nothing to build: the pool starts no worker
    assert _early_builds("level1/nope", None, None, "cpu", [solution]) is None
    assert _early_builds("level1/softmax", None, tmp_path, "cpu", [solution]) is None  # not in the folder
    assert _early_builds(None, tmp_path / "missing.py", None, "cpu", [solution]) is None
    assert _early_builds("level1/softmax", PROBLEMS / "add_small.py", None, "cpu", [solution]) is None
    (tmp_path / "suite" / "level1").mkdir(parents=True)
    (tmp_path / "suite" / "level1" / "add.py").write_text((PROBLEMS / "add_small.py").read_text())
    for task, problem, folder in (
        ("level1/softmax", None, None),
        (None, PROBLEMS / "add_small.py", None),
        ("level1/add", None, tmp_path / "suite"),
    ):
        pool = _early_builds(task, problem, folder, "cpu", [solution])
        assert pool is not None and pool.target is None, (task, problem, folder)
        pool.close()


@pytest.mark.parametrize(
    ("task", "problem", "folder"),
    [("level1/softmax", None, None), (None, "add_small.py", None), ("level1/add", None, "suite")],
)
def test_a_problem_file_found_without_loading_is_the_one_find_problem_loads(
    task: str | None, problem: str | None, folder: str | None, tmp_path: Path
) -> None:
    from cudasmith.tasks.lookup import find_problem, find_problem_file

    (tmp_path / "suite" / "level1").mkdir(parents=True)
    (tmp_path / "suite" / "level1" / "add.py").write_text((PROBLEMS / "add_small.py").read_text())
    given = (task, problem and PROBLEMS / problem, folder and tmp_path / folder)
    loaded = find_problem(*given)
    assert ProblemRef.from_file(*find_problem_file(*given)) == ProblemRef.of(loaded)


def test_the_runtime_loads_what_a_solution_imports_only_when_asked() -> None:
    from cudasmith.runtime import compile_c, compile_cuda
    from cudasmith.runtime.cpu import compile_c as own_c
    from cudasmith.runtime.cuda import compile_cuda as own_cuda

    assert (compile_c, compile_cuda) == (own_c, own_cuda)
    import cudasmith.runtime

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        cudasmith.runtime.nope  # noqa: B018
