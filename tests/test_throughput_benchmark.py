"""benchmarks/throughput.py and its KernelBench driver: the batch order, the session child's events, the
bookkeeping and report on made-up results, KernelBench's results in our statuses, loading its evaluator
without its package __init__, and a run of the cudasmith approaches on the CPU."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any, ClassVar

import pytest

import cudasmith

from conftest import ROOT, SOLUTIONS

BENCHMARKS = ROOT / "benchmarks"


@pytest.fixture(scope="module")
def scripts() -> Iterator[SimpleNamespace]:
    """The benchmark scripts as modules (they import their sibling throughput_report)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield SimpleNamespace(
            throughput=importlib.import_module("throughput"),
            report=importlib.import_module("throughput_report"),
            kernelbench=importlib.import_module("kernelbench_evaluator"),
        )
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_the_batch_runs_cheap_candidates_first(scripts: SimpleNamespace) -> None:
    batch = scripts.throughput.load_batch(BENCHMARKS / "candidates", None, None)
    expected = json.loads((BENCHMARKS / "candidates" / "EXPECTED.json").read_text())
    assert sorted(c.name for c in batch) == sorted(expected)
    tasks = {c.task for c in batch}
    assert len({c.task for c in batch[: len(tasks)]}) == len(tasks), "round-robin over tasks"
    builds = [i for i, c in enumerate(batch) if c.kind == "load_inline" or c.expected == "timeout"]
    assert builds == list(range(len(batch) - len(builds), len(batch))), "builds and hangs last"
    chosen = scripts.throughput.load_batch(BENCHMARKS / "candidates", ["level1/softmax"], "*/cuda_*")
    assert chosen and all(c.task == "level1/softmax" and "/cuda_" in c.name for c in chosen)


class FakeJudge:
    """Stands in for cudasmith.Judge: a verdict per file name, and one file that breaks the harness."""

    opened: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, **options: Any) -> None:
        FakeJudge.opened.append(options)

    def __enter__(self) -> FakeJudge:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def judge(self, path: Path) -> SimpleNamespace:
        if path.name == "breaks.py":
            raise RuntimeError("worker pool gone")
        return SimpleNamespace(status="correct", reason="fine", speedup=1.5, wall_s=0.1)


def test_the_session_child_reports_every_candidate(
    scripts: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cudasmith, "Judge", FakeJudge, raising=False)
    names = ["level1/relu/a.py", "level1/relu/breaks.py", "level1/softmax/b.py"]
    args = argparse.Namespace(names=names, candidates=Path("/batch"), device="cpu", baselines="eager")
    events: list[dict[str, Any]] = []
    scripts.throughput.child_session(args, lambda **event: events.append(event))
    assert [o["task"] for o in FakeJudge.opened] == ["level1/relu", "level1/softmax"]
    assert FakeJudge.opened[0]["baselines"] == ("eager",)
    verdicts = {e["name"]: e for e in events if e["event"] == "candidate"}
    assert verdicts["level1/relu/a.py"]["status"] == "correct"
    assert verdicts["level1/relu/breaks.py"]["status"] == "harness_error"
    assert "worker pool gone" in verdicts["level1/relu/breaks.py"]["reason"]
    assert [e["event"] for e in events].count("setup") == 2


def _candidate(report: ModuleType, name: str, expected: str, kind: str = "nvrtc") -> Any:
    return report.Candidate(name, Path(name), str(Path(name).parent), expected, kind)


def test_bookkeeping_errors_and_report(scripts: SimpleNamespace, capsys: pytest.CaptureFixture[str]) -> None:
    report = scripts.report
    batch = [
        _candidate(report, "level1/relu/good.py", "correct"),
        _candidate(report, "level1/relu/wrong.py", "incorrect"),
        _candidate(report, "level1/vector_add/hang.py", "timeout"),
    ]
    session = report.Approach("session", wall_s=6.0, busy_fraction=0.5)
    session.results = {
        "level1/relu/good.py": report.Result("correct", 1.0),
        "level1/relu/wrong.py": report.Result("correct", 2.0),  # a judge error
        "level1/vector_add/hang.py": report.Result("timeout", 3.0),
    }
    kernelbench = report.Approach("kernelbench", wall_s=12.0)
    kernelbench.results = {
        "level1/relu/good.py": report.Result("correct", 5.0),
        "level1/relu/wrong.py": report.Result("correct", 5.0),  # KernelBench's verdicts are not ours
        "level1/vector_add/hang.py": report.Result("left out"),
    }
    approaches = [session, kernelbench]
    assert session.summary() == {
        "judged": 3,
        "wall_s": 6.0,
        "median_s": 2.0,
        "candidates_per_gpu_minute": 30.0,
        "busy_fraction": 0.5,
    }
    assert kernelbench.summary()["judged"] == 2 and kernelbench.summary()["candidates_per_gpu_minute"] == 10.0
    errors = report.judge_errors(approaches, batch)
    assert errors == ["session: level1/relu/wrong.py expected incorrect, judged correct"]
    document = {
        "versions": {"device": "NVIDIA H100"},
        "notes": [],
        "judge_errors": errors,
        "busy_fraction_measures": "NVML",
        "cold_oneshot": {"solution": "s.py", "task": "t", "seconds": 25.0, "status": "correct"},
        "hang_oneshot": {"solution": "hang.py", "task": "t", "seconds": 19.0, "status": "timeout"},
    }
    lines = report.report_lines(batch, approaches, document)
    assert any("3.00x the candidates per GPU-minute" in line for line in lines)
    assert any(
        "on the 2 candidates every approach judged: session 1.50 s, kernelbench 5.00 s" in line
        for line in lines
    )
    assert any(
        line.startswith("hanging kernel level1/vector_add/hang.py costs: session 3.0 s") for line in lines
    )
    assert any("kernelbench accepted 1 wrong candidates" in line for line in lines)
    assert any(
        "`cudasmith eval hang.py --task t` with default limits: 19.0 s, timeout" in line for line in lines
    )
    document["lines"] = lines
    report.print_tables(batch, approaches, document)
    printed = capsys.readouterr().out
    assert "Throughput on NVIDIA H100" in printed and "30.00" in printed and "JUDGE ERROR" in printed


def test_kernelbench_results_map_to_our_statuses(scripts: SimpleNamespace) -> None:
    outcome = scripts.kernelbench.outcome

    def result(**fields: Any) -> SimpleNamespace:
        base = {"compiled": True, "correctness": False, "metadata": {}, "runtime": -1.0, "ref_runtime": -1.0}
        return SimpleNamespace(**(base | fields))

    correct = outcome(
        result(correctness=True, runtime=20.0, ref_runtime=50.0, metadata={"correctness_trials": "(5 / 5)"})
    )
    assert correct["status"] == "correct" and correct["speedup"] == 2.5 and correct["time_ms"] == 0.02
    assert (
        outcome(result(compiled=False, metadata={"compilation_error": "nvcc: bad"}))["status"]
        == "compile_error"
    )
    assert outcome(result(metadata={"runtime_error": "illegal memory access"}))["status"] == "runtime_error"
    assert outcome(result(metadata={"correctness_issue": "Output mismatch"}))["status"] == "incorrect"
    assert outcome(None)["status"] == "runtime_error"


def test_kernelbench_evaluator_loads_without_the_package_init(
    scripts: SimpleNamespace, tmp_path: Path
) -> None:
    package = tmp_path / "src" / "kernelbench"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('the LLM clients are not installed')\n")
    (package / "utils.py").write_text(
        "import litellm_is_not_here\n\ndef get_gpu_vendor(device=None):\n    return 'vendor ' + torch.__name__\n"
    )
    (package / "timing.py").write_text("TIMING = 1\n")
    (package / "eval.py").write_text(
        "from . import timing\n\ndef eval_kernel_against_ref():\n"
        "    from .utils import get_gpu_vendor\n    return get_gpu_vendor(), timing.TIMING\n"
    )
    try:
        evaluator = scripts.kernelbench.load_evaluator(tmp_path)
        assert evaluator.eval_kernel_against_ref() == ("vendor torch", 1)
    finally:
        for name in [n for n in sys.modules if n == "kernelbench" or n.startswith("kernelbench.")]:
            del sys.modules[name]


@pytest.mark.slow
def test_a_cpu_run_of_the_cudasmith_approaches(tmp_path: Path) -> None:
    batch = tmp_path / "batch"
    for name, source in (("good.py", "vector_add_cpu.py"), ("misses_tail.py", "vector_add_misses_tail.py")):
        (batch / "level1" / "vector_add").mkdir(parents=True, exist_ok=True)
        (batch / "level1" / "vector_add" / name).write_text((SOLUTIONS / source).read_text())
    expected = {"level1/vector_add/good.py": "correct", "level1/vector_add/misses_tail.py": "incorrect"}
    (batch / "EXPECTED.json").write_text(json.dumps(expected))
    out = tmp_path / "throughput.json"
    command = [
        sys.executable,
        str(BENCHMARKS / "throughput.py"),
        "--device",
        "cpu",
        "--candidates",
        str(batch),
    ]
    command += ["--approaches", "session,oneshot", "--no-cold", "--no-hang", "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Throughput on cpu" in done.stdout
    document = json.loads(out.read_text())
    oneshot = document["approaches"]["oneshot"]
    assert {n: r["status"] for n, r in oneshot["results"].items()} == expected
    assert oneshot["judged"] == 2 and oneshot["median_s"] > 0
    session = document["approaches"]["session"]["results"]
    assert all(r["status"] in ("unavailable", expected[n]) for n, r in session.items())
