"""The search's parts without a real judge: tunables, novelty, the verifier's scoring, the ensemble,
ptxas and Nsight Compute facts, and the driver with recorded answers (`replay:`) and a scripted judge
(the end-to-end tests with the real judge are in test_optimize.py)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from types import TracebackType
from typing import ClassVar

import pytest

from cudasmith.harness.nsight import STALL_METRIC, parse_metrics, profile
from cudasmith.harness.options import EvalOptions
from cudasmith.harness.verdict import ConfigResult, Verdict
from cudasmith.llm import load_llm_config
from cudasmith.llm.replay import load_recording
from cudasmith.search.config import OptimizeConfig, SearchSettings
from cudasmith.search.ensemble import Ensemble
from cudasmith.search.novelty import NoveltyFilter
from cudasmith.search.optimize import OptimizeResult, optimize
from cudasmith.search.resources import cuda_kernels, parse_ptxas_log, ptxas_resources
from cudasmith.search.tunables import declared_tunables, variants
from cudasmith.search.verifier import parse_opinion
from cudasmith.store import RunStore
from cudasmith.store.summary import VerifierAgreement
from cudasmith.tasks.problem import Problem

from conftest import PROBLEMS, ROOT, SOLUTIONS

TUNABLE_SOURCE = """import torch
BLOCK = 256
UNROLL = 2
TUNABLE = {"BLOCK": [128, 256, 512, 1024], "UNROLL": (1, 2, 4), "NOT_DEFINED": [1]}
"""


def test_tunables_are_swept_one_constant_at_a_time_nearest_values_first() -> None:
    found = {t.name: (t.current, t.values) for t in declared_tunables(TUNABLE_SOURCE)}
    assert found == {"BLOCK": (256, (128, 256, 512, 1024)), "UNROLL": (2, (1, 2, 4))}
    made = variants(TUNABLE_SOURCE, 4)
    assert [values for _, values in made] == [{"BLOCK": 128}, {"UNROLL": 1}, {"BLOCK": 512}, {"UNROLL": 4}]
    assert "BLOCK = 512\nUNROLL = 2\n" in made[2][0]
    assert variants("BLOCK = 256\n", 4) == [] and variants("not python (", 4) == []


def test_novelty_ignores_layout_and_comments_and_catches_near_duplicates() -> None:
    seen = NoveltyFilter(threshold=0.95)
    original = (SOLUTIONS / "vector_add_cpu.py").read_text()
    seen.add(7, original)
    relaid = "# a comment\n" + original.replace("    #pragma omp", "  #pragma omp").replace("i < n", "i<n")
    assert seen.why_not_novel(relaid) == "a duplicate of candidate 7"
    assert "#pragma" in relaid, "preprocessor lines are code, not comments"
    renamed = original.replace("out[i] = a[i] + b[i]", "out[i] = b[i] + a[i]")
    assert seen.why_not_novel(renamed).startswith("a near-duplicate of candidate 7")  # type: ignore[union-attr]
    assert seen.why_not_novel(renamed, near=False) is None
    assert seen.why_not_novel((SOLUTIONS / "softmax_cpu_unnormalised.py").read_text()) is None


def test_the_verifier_is_read_leniently_and_scored_against_the_judge() -> None:
    assert parse_opinion('Thinking… {"verdict": "FAIL", "reason": "reads past n"}')["verdict"] == "fail"
    assert parse_opinion("PASS, it looks fine")["verdict"] == "pass"
    assert parse_opinion("pass or fail, hard to say")["verdict"] == "unclear"
    pairs = [
        ("fail", "incorrect"),
        ("fail", "correct"),
        ("pass", "rejected"),
        ("pass", "correct"),
        ("unclear", "x"),
    ]
    scored = VerifierAgreement.of("openai:fake", pairs)
    assert (scored.precision, scored.recall, scored.unclear) == (0.5, 0.5, 1)
    assert (scored.flagged_and_failed, scored.flagged_but_correct) == (1, 1)
    assert (scored.passed_but_failed, scored.passed_and_correct) == (1, 1)
    alone = VerifierAgreement.of("openai:fake", [("pass", "correct")])
    assert alone.precision is None, "no 'fail' said: precision unknown"


def test_the_ensemble_weighs_success_and_cost() -> None:
    ensemble = Ensemble(["cheap", "strong"], (1.0, 1.0), cost_sensitivity=1.0)
    assert ensemble.probabilities() == {"cheap": 0.5, "strong": 0.5}
    for _ in range(10):
        ensemble.record_answer("cheap", 0.001)
        ensemble.record_answer("strong", 0.1)
    ensemble.record_verdict("strong", True)
    chances = ensemble.probabilities()
    assert chances["cheap"] > 0.8, "ten times cheaper and nearly as good"
    ensemble.record_answer("not-in-the-ensemble", None)
    assert ensemble.pick(random.Random(0)) in ("cheap", "strong")
    with pytest.raises(ValueError, match="1 weights for 2 models"):
        Ensemble(["a", "b"], (1.0,))


def test_ptxas_reports_registers_shared_memory_and_spills() -> None:
    pytest.importorskip("cuda.bindings")
    source = (SOLUTIONS / "vector_add_cuda.py").read_text()
    assert [name for _, name in cuda_kernels(source)] == ["add"]
    [found] = ptxas_resources(source, "sm_90a")
    assert found.kernel == "add" and 0 < found.registers < 64 and found.spill_store_bytes == 0
    log = (
        "ptxas info    : Compiling entry function 'big' for 'sm_90a'\n"
        "ptxas         .     240 bytes stack frame, 240 bytes spill stores, 420 bytes spill loads\n"
        "ptxas info    : Used 24 registers, used 1 barriers, 4096 bytes smem\n"
    )
    [big] = parse_ptxas_log(log)
    assert (big.registers, big.shared_bytes, big.spill_store_bytes, big.spill_load_bytes) == (
        24,
        4096,
        240,
        420,
    )
    assert "240 B spill stores" in big.describe()


def test_nsight_metrics_are_combined_by_kernel_time_and_skipped_without_a_gpu(tmp_path: Path) -> None:
    header = '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"'
    rows = [
        '"0","a","dram__throughput.avg.pct_of_peak_sustained_elapsed","%","90"',
        '"0","a","gpu__time_duration.sum","usecond","3"',
        f'"0","a","{STALL_METRIC.format("long_scoreboard")}","","12"',
        '"1","b","dram__throughput.avg.pct_of_peak_sustained_elapsed","%","30"',
        '"1","b","gpu__time_duration.sum","nsecond","1000"',
    ]
    found = parse_metrics("==PROF== Connected\n" + "\n".join([header, *rows]))
    assert found.kernels == 2 and found.metrics["dram__throughput.avg.pct_of_peak_sustained_elapsed"] == 75
    assert "DRAM throughput 75 %" in found.describe() and "long scoreboard 9.0" in found.describe()
    import torch

    if not torch.cuda.is_available():
        skipped = profile(tmp_path / "x.py", PROBLEMS / "add_small.py", {}, 0)
        assert skipped.kernels == 0 and skipped.describe() == "Nsight Compute: no profile (no GPU here)"


class ScriptedJudge:
    """Judges by what a solution says of itself: `VERDICT = "correct 1.5"`; a BLOCK of 512 is 3x."""

    calls: ClassVar[list[str]] = []

    def __init__(self, problem: Problem, options: EvalOptions) -> None:
        self.problem = problem

    def __enter__(self) -> ScriptedJudge:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None

    def judge(self, path: Path) -> Verdict:
        source = path.read_text()
        ScriptedJudge.calls.append(source)
        status, _, speed = re.search(r'VERDICT = "([^"]*)"', source)[1].partition(" ")  # type: ignore[index]
        speedup = 3.0 if "BLOCK = 512" in source else float(speed or 1)
        config = ConfigResult(0, {"n": 8}, False, status, time_ms=1.0, time_ci95_ms=[0.99, 1.01])
        return Verdict(
            status,
            f"scripted {status}",
            self.problem.name,
            str(path),
            "cpu",
            speedup=speedup if status == "correct" else None,
            configs=[config],
        )


def solution(verdict: str, extra: str = "") -> str:
    return f'```python\nimport torch\nVERDICT = "{verdict}"\n{extra}\nclass ModelNew(torch.nn.Module):\n    pass\n```'


def replay_file(path: Path, answers: list[str]) -> str:
    path.write_text("".join(json.dumps(a) + "\n" for a in answers))
    return f"replay:{path}"


def search(tmp_path: Path, model: str, **config: object) -> OptimizeResult:
    search = OptimizeConfig(**config)  # type: ignore[arg-type]
    settings = SearchSettings(search, EvalOptions(device="cpu"), llm=load_llm_config())
    return optimize(
        PROBLEMS / "add_small.py", model, settings, store=tmp_path / "runs.db", judge_factory=ScriptedJudge
    )


def test_fsr_sweeps_a_new_bests_tunables_and_stops_without_gain(tmp_path: Path) -> None:
    tunable = 'BLOCK = 256\nTUNABLE = {"BLOCK": [128, 256, 512]}'
    answers = [solution("incorrect"), "prose", solution("correct 1.5", tunable), solution("correct 1.2")]
    answers += [solution("correct 2.9", "A = 1"), solution("correct 2.0", "B = 2")] * 3
    ScriptedJudge.calls = []
    result = search(tmp_path, replay_file(tmp_path / "answers.jsonl", answers), n=2, depth=6, patience=1)
    summary = result.summary
    assert summary.best_speedup == 3.0, "BLOCK = 512, found without a model call"
    assert summary.stop_reason == "no gain beyond the timing noise in 1 rounds"
    assert summary.counts.rounds == 3 and summary.llm is not None and summary.llm.calls == 6
    with RunStore(tmp_path / "runs.db") as store:
        swept = [c for c in store.candidates(summary.run_id) if c.origin == "tunable"]
        assert [c.meta["tunables"] for c in swept] == [{"BLOCK": 128}, {"BLOCK": 512}]
        assert all(c.completion_id is None and c.operator == "tunable" for c in swept)
        [round_two] = [call for call in store.calls(summary.run_id) if call.key == "r2/c0"]
        assert "BLOCK = 512" in round_two.request["messages"][1]["content"], "the swept best seeds the round"


def test_a_verdict_is_judged_once_per_code_task_device_and_judge(tmp_path: Path) -> None:
    answers = [solution("correct 1.5"), solution("incorrect")]
    ScriptedJudge.calls = []
    first = search(tmp_path, replay_file(tmp_path / "a.jsonl", answers), n=2, depth=1)
    second = search(tmp_path, replay_file(tmp_path / "b.jsonl", answers), n=2, depth=1)
    assert len(ScriptedJudge.calls) == 2
    assert second.summary.counts.cached == 2 and second.summary.counts.judged == 0
    assert second.summary.counts.statuses == first.summary.counts.statuses
    replayed = load_recording(tmp_path / "runs.db")
    assert [c.text for c in replayed] == answers, "replay: serves a store's latest run"
    earlier = load_recording(Path(f"{tmp_path / 'runs.db'}#{first.run_id}"))
    assert len(earlier) == 2


def test_the_gpu_benchmarks_kernels_compile_with_nvrtc_except_the_broken_one() -> None:
    pytest.importorskip("cuda.bindings")
    from cudasmith.errors import CompileError
    from cudasmith.runtime.cuda import _nvrtc_compile

    kernels = ROOT / "benchmarks" / "optimize_gpu_kernels"
    compiled = {}
    for path in sorted(kernels.glob("*.py")):
        for source, name in cuda_kernels(path.read_text()):
            try:
                compiled[name] = bool(_nvrtc_compile(source, name, ["--gpu-architecture=sm_90a"])[0])
            except CompileError as exc:
                compiled[name] = str(exc)
    assert compiled == {
        "add_broken": 'NVRTC: kernel.cu(4): error: identifier "undeclared_offset" is undefined',
        "add_few_blocks": True,
        "add_full_grid": True,
        "add_one_block": True,
        "add_wrong": True,
    }
    assert [t.name for t in declared_tunables((kernels / "full_grid.py").read_text())] == ["BLOCK"]


def test_the_live_panel_and_the_summary_table_say_what_the_run_did(tmp_path: Path) -> None:
    from rich.console import Console

    from cudasmith.exec import ExecutorStats, LaneStats
    from cudasmith.report.optimize_view import print_summary, render_snapshot
    from cudasmith.search.state import Snapshot
    from cudasmith.search.strategies.base import SearchCandidate

    verdict = Verdict(
        "correct", "ok", "t", "s.py", "cpu", speedup=2.0, speedups={"eager": 2.0, "compile": 1.25}
    )
    top = SearchCandidate(7, "r1/c0", 1, "refine", verdict=verdict, source="x")
    lanes = [LaneStats("cuda:0", 5, 45.0), LaneStats("cuda:1", 4, 30.0, judging=True)]
    stats = ExecutorStats("local", lanes, 50.0, building=1, waiting_for_build=0, ready=2, max_ready=3)
    snapshot = Snapshot("round 2 of 5", 9, 1, 1, 2, top, 0.0123, 12.5, 3.25, stats)
    console = Console(record=True, width=200)
    console.print(render_snapshot(snapshot, "optimize level1/relu"))
    panel = console.export_text()
    assert "round 2 of 5 · judged 9 · judging 1 · queued 1 · model calls in flight 2" in panel
    assert "best: candidate 7 · 2.00x eager PyTorch, 1.25x torch.compile" in panel
    assert "spent US$0.0123" in panel and "(median) 12.5 s" in panel and "answers 3.2 s" in panel
    assert (
        "lanes: local, 2 lanes busy 75% (cuda:0 90%, cuda:1 60%) · ready 2 (at most 3), building 1" in panel
    )

    answers = [solution("correct 1.5"), solution("incorrect")]
    result = search(tmp_path, replay_file(tmp_path / "a.jsonl", answers), n=2, depth=1)
    console = Console(record=True, width=200)
    print_summary(result.summary, console)  # type: ignore[attr-defined]
    table = console.export_text()
    assert "best: candidate 1" in table and "correct 1, incorrect 1" in table
    assert "US$0.0000; 0 tokens in, 0 out" in table, "replayed answers cost nothing now"
    assert f"resume with --resume {result.run_id}" in table  # type: ignore[attr-defined]
    assert "local, 1 lane busy" in table, "the executor's lanes, as the summary keeps them"


class FailingJudge(ScriptedJudge):
    """A judge that breaks down on its third candidate (the harness failing, not the candidate)."""

    def judge(self, path: Path) -> Verdict:
        if len(ScriptedJudge.calls) == 2:
            from cudasmith.errors import HarnessError

            raise HarnessError("the reference worker died")
        return super().judge(path)


def test_an_evolve_run_broken_off_resumes_without_asking_or_judging_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cudasmith.errors import HarnessError
    from cudasmith.search.config import EvolveConfig

    from fake_llm import FakeLLMServer, Reply, openai_body

    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    islands = EvolveConfig(islands=2, migration_interval=1)
    config = OptimizeConfig(strategy="evolve", n=3, depth=2, max_in_flight=1, max_queued=1, evolve=islands)
    answers = [solution(f"correct 1.{k}", f"K = {k}") for k in range(6)]
    settings = SearchSettings(config, EvalOptions(device="cpu"))
    with FakeLLMServer().running() as server:
        server.default = Reply(openai_body("prose"))
        server.push(*(Reply(openai_body(text)) for text in answers))
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        ScriptedJudge.calls = []
        with pytest.raises(HarnessError):
            optimize(
                PROBLEMS / "add_small.py",
                "openai:fake",
                settings,
                store=tmp_path / "runs.db",
                judge_factory=FailingJudge,
            )
        with RunStore(tmp_path / "runs.db") as store:
            [run] = store.runs()
            assert (run.status, run.stop_reason) == ("failed", "the reference worker died")
        asked_before = len(server.seen)
        result = optimize(
            settings=settings, store=tmp_path / "runs.db", resume=run.id, judge_factory=ScriptedJudge
        )
    assert result.summary.counts.outcomes == {"correct": 6}
    assert result.summary.stop_reason == "all 6 proposals made"
    assert len(server.seen) == 6, f"{asked_before} asked before the break, none of them again"
    assert len(ScriptedJudge.calls) == len(set(ScriptedJudge.calls)) == 6, "nothing judged twice"
    with RunStore(tmp_path / "runs.db") as store:
        keys = [c.key for c in store.calls(run.id)]
        assert keys == [f"g{k}" for k in range(6)]
        assert store.events(run.id, "migration"), "the restored islands go on migrating"
