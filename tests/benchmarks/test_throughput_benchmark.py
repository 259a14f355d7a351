"""benchmarks/throughput.py and its KernelBench driver: the batch order, the session child's events, the
bookkeeping and report on made-up results, KernelBench's results in our statuses, loading its evaluator
without its package __init__, and a run of the cudasmith approaches on the CPU; stream mode's variants,
rows, agreement and interference figures, and a stream run on the CPU."""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any, ClassVar

import pytest
from test_candidates import ARCH, nvrtc_kernels

from cudasmith.harness.witnesses.screen import screen
from cudasmith.runtime import compile_cuda

from conftest import EXAMPLES, ROOT, SOLUTIONS

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
            variants=importlib.import_module("stream_variants"),
            stream=importlib.import_module("throughput_stream"),
            stream_report=importlib.import_module("stream_report"),
            interference=importlib.import_module("stream_interference"),
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
    """Stands in for cudasmith.Judge as the executor's lane opens it: a verdict per file name, and one
    file that breaks the harness."""

    opened: ClassVar[list[tuple[str, Any]]] = []

    def __init__(self, problem: Any, options: Any) -> None:
        FakeJudge.opened.append((problem.name, options))

    def __enter__(self) -> FakeJudge:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def judge(self, path: Path) -> SimpleNamespace:
        if path.name == "breaks.py":
            raise RuntimeError("worker pool gone")
        return SimpleNamespace(status="correct", reason="fine", speedup=1.5, wall_s=0.1)


def test_the_session_child_judges_the_batch_through_the_executor_and_reports_every_candidate(
    scripts: SimpleNamespace, tmp_path: Path
) -> None:
    names = ["level1/relu/a.py", "level1/relu/breaks.py", "level1/softmax/b.py"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("import torch  # nothing to build\n")
    args = argparse.Namespace(names=names, candidates=tmp_path, device="cpu", baselines="eager", in_flight=2)
    events: list[dict[str, Any]] = []
    scripts.throughput.child_session(args, lambda **event: events.append(event), factory=FakeJudge)
    # Sessions per task on the lane (the executor tries a candidate whose judge broke once more, in a
    # fresh session); the batch's options in each.
    assert FakeJudge.opened[0][0] == "level1/relu" and {n for n, _ in FakeJudge.opened} == {
        "level1/relu",
        "level1/softmax",
    }
    assert all(options.baselines == ("eager",) and options.in_flight == 2 for _, options in FakeJudge.opened)
    verdicts = {e["name"]: e for e in events if e["event"] == "candidate"}
    assert verdicts["level1/relu/a.py"]["status"] == "correct"
    assert verdicts["level1/softmax/b.py"]["status"] == "correct"
    assert verdicts["level1/relu/breaks.py"]["status"] == "harness_error"
    assert "worker pool gone" in verdicts["level1/relu/breaks.py"]["reason"]
    assert sorted(e["name"] for e in events if e["event"] == "start") == sorted(names)


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


def test_the_stream_is_the_same_every_time_mixed_and_a_third_wrong(
    scripts: SimpleNamespace, tmp_path: Path
) -> None:
    first = scripts.variants.write_stream(tmp_path / "a")
    again = scripts.variants.write_stream(tmp_path / "b")
    assert first == again
    assert all((tmp_path / "a" / n).read_text() == (tmp_path / "b" / n).read_text() for n in first)
    sources = {name: (tmp_path / "a" / name).read_text() for name in first}
    assert len(set(sources.values())) == len(sources), "every variant compiles afresh"
    kinds = {scripts.report.kind_of(source) for source in sources.values()}
    assert {"nvrtc", "triton", "load_inline"} <= kinds
    for task in scripts.variants.TASKS:
        statuses = [status for name, status in first.items() if name.startswith(task + "/")]
        assert len(statuses) == scripts.variants.PER_TASK
        assert sum(status != "correct" for status in statuses) * 3 == len(statuses), task
    for name, source in sources.items():
        assert f"Expected verdict: {first[name]}" in source and "class ModelNew" in source, name
        assert screen(source) is None, name
    with pytest.raises(ValueError, match="exactly once"):
        broken = scripts.variants.Recipe(
            "level1/relu/cuda_relu.py", "gone", (("no such text", ""),), "correct"
        )
        scripts.variants.variant(broken, 1)


@pytest.mark.skipif(importlib.util.find_spec("cuda.bindings") is None, reason="needs cuda-python")
def test_the_streams_nvrtc_kernels_compile(scripts: SimpleNamespace, tmp_path: Path) -> None:
    expected = scripts.variants.write_stream(tmp_path, per_task=len(scripts.variants.RECIPES["level1/relu"]))
    compiled = 0
    for name in expected:
        for source, kernel, options in nvrtc_kernels((tmp_path / name).read_text()):
            compile_cuda(source, kernel, options=options, arch=ARCH)
            compiled += 1
    assert compiled >= 10


def _row(
    stream: ModuleType, report: ModuleType, name: str, wall_s: float, statuses: dict[str, tuple[str, float]]
) -> Any:
    row = stream.Row(report.Approach(name, wall_s=wall_s), {"level1/relu/a.py"})
    row.approach.results = {n: report.Result(status, seconds) for n, (status, seconds) in statuses.items()}
    return row


def test_stream_rows_compare_with_kernelbench_and_with_each_other(scripts: SimpleNamespace) -> None:
    stream, report = scripts.stream, scripts.report
    batch = [
        _candidate(report, "level1/relu/a.py", "correct"),
        _candidate(report, "level1/relu/b.py", "incorrect"),
        _candidate(report, "level1/relu/c.py", "correct"),
    ]
    a, b, c = (f"level1/relu/{x}.py" for x in "abc")
    runs = {
        "kernelbench": (60.0, {a: ("correct", 6.0), b: ("correct", 5.0), c: ("not reached", 0.0)}),
        "session K=1": (15.0, {a: ("correct", 9.0), b: ("incorrect", 1.0), c: ("correct", 2.0)}),
        "session K=4": (10.0, {a: ("correct", 9.0), b: ("correct", 3.0), c: ("correct", 4.0)}),
    }
    kernelbench, one, four = (_row(stream, report, name, *run) for name, run in runs.items())
    rate = kernelbench.summary(batch, None)["candidates_per_gpu_minute"]
    assert rate == 2.0
    summary = one.summary(batch, rate)
    assert summary["candidates_per_gpu_minute"] == 12.0 and summary["vs_kernelbench"] == 6.0
    assert summary["warm_median_s"] == 1.5, "the first of the task is left out"
    assert summary["wall_per_candidate_s"] == 5.0 and summary["unexpected"] == []
    assert four.summary(batch, rate)["unexpected"] == ["level1/relu/b.py"]
    assert scripts.stream_report.disagreements([kernelbench, one, four], batch) == [
        "session K=4: level1/relu/b.py correct, K=1 said incorrect"
    ]
    assert stream.session_rows(4, True) == [
        ("session K=1", 1),
        ("session K=default", None),
        ("session K=4", 4),
    ]
    assert stream.session_rows(4, False) == [("session K=1", 1)]
    # KernelBench reached 2 of the 3: every ratio to its rate is marked, and the note says why.
    note = scripts.stream_report.partial_note(2, len(batch))
    assert note is not None and "judged 2 of the stream's 3 candidates" in note
    assert scripts.stream_report.partial_note(3, len(batch)) is None
    document = {"rows": {"session K=1": summary}, "kernelbench_partial": note}
    assert "(6.00x* KernelBench's)" in scripts.stream_report.row_line(one, document)
    assert "(6.00x KernelBench's)" in scripts.stream_report.row_line(one, {"rows": {"session K=1": summary}})


def test_the_interference_check_compares_times_config_by_config(scripts: SimpleNamespace) -> None:
    stream = scripts.interference
    alone = [{"times_ms": [0.010, 1.00]}, {"times_ms": [0.011, 1.02]}]
    calm = [{"times_ms": [0.0105, 1.01]}, {"times_ms": [0.0106, 1.02]}]
    found = stream.compare_times(alone, calm)
    assert found["passed"] and found["delta_pct"] == [
        pytest.approx(0.476, abs=1e-3),
        pytest.approx(0.495, abs=1e-3),
    ]
    disturbed = [{"times_ms": [0.0105, 1.10]}, {"times_ms": [0.0105, 1.12]}]
    found = stream.compare_times(alone, disturbed)
    assert not found["passed"] and found["worst_pct"] == pytest.approx((1.11 / 1.01 - 1) * 100)
    line = stream.interference_line({**found, "k": 4})
    assert line.startswith("interference check (K=4): FAIL") and "limit ±2 %" in line
    assert "not measured (no GPU)" in stream.interference_line(
        {"notes": ["no GPU"], **stream.compare_times([], [])}
    )


@pytest.mark.slow
def test_the_streams_gate_lets_waiters_in_in_the_order_they_asked() -> None:
    """A thread that releases the gate and asks again goes behind those already waiting."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        gate = importlib.import_module("stream_children").FairGate(1)
    finally:
        sys.path.remove(str(BENCHMARKS))
    order: list[str] = []

    def other() -> None:
        with gate:
            order.append("other")

    with gate:
        thread = threading.Thread(target=other)
        thread.start()
        while not gate.waiting():  # until the other thread waits at the gate
            thread.join(0.01)
        order.append("first")
    with gate:
        order.append("first again")
    thread.join()
    assert order == ["first", "other", "first again"]


def test_a_cpu_stream_run(tmp_path: Path) -> None:
    """Two tasks' streams, each in a session of its own side by side, at most K candidates in flight among
    them: K=1 judges one candidate at a time whichever its task."""
    stream = tmp_path / "stream"
    (stream / "level1" / "vector_add").mkdir(parents=True)
    (stream / "level1" / "softmax").mkdir(parents=True)
    honest = (SOLUTIONS / "vector_add_cpu.py").read_text()
    (stream / "level1" / "vector_add" / "good.py").write_text(honest)
    (stream / "level1" / "vector_add" / "good_again.py").write_text("# a variant\n" + honest)
    (stream / "level1" / "vector_add" / "tail.py").write_text(
        (SOLUTIONS / "vector_add_misses_tail.py").read_text()
    )
    (stream / "level1" / "softmax" / "softmax.py").write_text((EXAMPLES / "softmax_cpu.py").read_text())
    expected = {
        "level1/vector_add/good.py": "correct",
        "level1/vector_add/tail.py": "incorrect",
        "level1/softmax/softmax.py": "correct",
        "level1/vector_add/good_again.py": "correct",
    }
    (stream / "EXPECTED.json").write_text(json.dumps(expected))
    out = tmp_path / "stream.json"
    command = [sys.executable, str(BENCHMARKS / "throughput.py"), "--stream", "--device", "cpu"]
    command += ["--candidates", str(stream), "--no-interference", "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1200, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Stream throughput on cpu" in done.stdout and "session K=1: 4 judged" in done.stdout
    document = json.loads(out.read_text())
    row = document["rows"]["session K=1"]
    assert {n: r["status"] for n, r in row["results"].items()} == expected
    assert row["judged"] == 4 and row["unexpected"] == [] and row["warm_median_s"] > 0
    assert document["judge_errors"] == []
    # Each candidate's progress lines, in order, under its own name; none left unfinished.
    assert set(row["phases"]) == set(expected), row["phases"]
    # The row's end, step by step: each task's session closed, then the child's builds ahead.
    marks = [(who, what) for _, who, what in row["marks"]]
    assert {("level1/vector_add", "session closed"), ("level1/softmax", "session closed")} <= set(marks)
    assert marks[-1] == ("child", "builds ahead closed")
    # What the row spent outside its sessions: the child's start before the phases' clock, its exit after
    # the last mark; with the sessions' span, they make the row's wall time.
    assert 0 < row["child_start_s"] < row["wall_s"] and row["child_exit_s"] >= 0
    last = max(t for t, _, _ in row["marks"])
    assert row["child_start_s"] + last + row["child_exit_s"] == pytest.approx(row["wall_s"], abs=0.01)
    assert "the child's start took" in done.stdout
    # A window timed again is listed with the verdict's note saying which process shared it.
    assert bool(row["retimed_why"]) == (row["retimed_windows"] > 0)
    for steps in row["phases"].values():
        assert steps[0][1] == "loading the solution" and [t for t, _ in steps] == sorted(t for t, _ in steps)
    assert row["no_verdict"] == []
    # K=1 across both sessions: one candidate's lines all come before the next one's (one clock for all).
    spans = sorted((steps[0][0], steps[-1][0]) for steps in row["phases"].values())
    assert all(later[0] >= earlier[1] for earlier, later in itertools.pairwise(spans)), spans
    # What timing a config cost: each timed config of the correct candidates but its last (it has no
    # next line), and the measurement's parts.
    costs = row["config_costs"]
    assert costs["steps"] >= 2 * 2 and costs["step_s"] > 0 and costs["sampling_s"] > 0, costs
    assert "timing a config took" in done.stdout


@pytest.mark.slow
def test_the_interference_child_times_the_honest_kernel_alone_and_in_flight(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        children = importlib.import_module("stream_children")
    finally:
        sys.path.remove(str(BENCHMARKS))
    # On the CPU: the C softmax example is the honest kernel, a wrong softmax keeps the session busy.
    monkeypatch.setattr(children, "BATCH", EXAMPLES)
    monkeypatch.setattr(children, "HONEST", "softmax_cpu.py")
    (tmp_path / "busy.py").write_text((SOLUTIONS / "softmax_cpu_unnormalised.py").read_text())
    args = argparse.Namespace(
        device="cpu", baselines="eager", in_flight=1, candidates=tmp_path, names=["busy.py"]
    )
    events: list[dict[str, Any]] = []
    children.child_interference(args, lambda **event: events.append(event))
    honest = [e for e in events if e["event"] == "honest"]
    assert [e["role"] for e in honest] == ["alone"] * 2 + ["in_flight"] * 2
    assert all(e["status"] == "correct" and e["times_ms"] and all(e["times_ms"]) for e in honest), [
        (e["status"], e["times_ms"], e.get("reason")) for e in honest
    ]
    found = importlib.import_module("stream_interference").compare_times(honest[:2], honest[2:])
    assert len(found["delta_pct"]) == len(honest[0]["times_ms"])


def test_a_stream_row_says_how_long_its_extension_builds_took(
    scripts: SimpleNamespace, tmp_path: Path
) -> None:
    """The child reports each extension build ahead that ended (their candidates wait for them: the
    longest is a floor under the row's wall time), not the NVRTC head starts; the row's line says them."""
    import stream_children

    from cudasmith.exec.prebuild import BuildResult

    extension = tmp_path / "inline.py"
    extension.write_text((SOLUTIONS / "vector_add_load_inline.py").read_text())
    unfinished = tmp_path / "inline_again.py"
    unfinished.write_text("# another\n" + extension.read_text())
    nvrtc = tmp_path / "nvrtc.py"
    nvrtc.write_text("from cudasmith.runtime import compile_cuda  # a head start\n")
    ahead = SimpleNamespace(
        results={
            extension.read_text(): BuildResult(True, 47.46),
            nvrtc.read_text(): BuildResult(True, 4.0),
        }
    )
    events: list[dict[str, Any]] = []
    paths = [extension, unfinished, nvrtc]
    stream_children._extension_builds(lambda **event: events.append(event), ahead, "level1/vector_add", paths)
    assert events == [
        {"event": "build", "task": "level1/vector_add", "name": "inline.py", "seconds": 47.46, "ok": True}
    ]
    stream_children._extension_builds(lambda **event: events.append(event), None, "t", [extension])
    assert len(events) == 1, "a checkout without builds ahead reports none"
    line = scripts.stream_report.build_line([events[0], {**events[0], "seconds": 3.0, "ok": False}])
    assert "extension builds ahead took 47.5 s, 3.0 s (failed)" in line
    assert scripts.stream_report.build_line([]) == ""
