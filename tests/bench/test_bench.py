"""`cudasmith bench` on folders of honest and cheating CPU solutions: the numbers, the rule each cheat
broke, a KernelBench run re-judged against a (fake) KernelBench checkout, and resuming from the store."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from cudasmith.bench.folder import BenchResult, bench_folder
from cudasmith.harness.options import EvalOptions
from cudasmith.store import CandidateRecord, RunStore
from cudasmith.store.integrity import VERDICT_COLUMNS, verdict_mac
from cudasmith.store.metrics import speedup_of
from cudasmith.store.rules import rule_broken
from cudasmith.store.runs import RunView, load_run

from conftest import EXAMPLES, run_cli
from solution_folders import fake_kernelbench, solution

# One input set per config keeps the CPU judge quick; timing stays on, fast_p needs it.
QUICK = EvalOptions(device="cpu", seeds_per_config=1)
# file in the bench folder → (its source, the status the judge gives it, the rule it breaks)
SUITE = {
    "level1/relu/honest.py": (solution("honest_relu.py"), "correct", None),
    "level1/relu/in_place.py": (solution("mutate_in_place.py"), "rejected", "input-mutation"),
    "level1/relu/patched.py": (solution("patch_allclose.py"), "rejected", "tampering"),
    "level1/softmax/honest.py": (EXAMPLES / "softmax_cpu.py", "correct", None),
    "level1/softmax/torch_inside.py": (solution("torch_softmax.py"), "rejected", "pytorch-compute"),
    "level1/softmax/half_rows.py": (solution("softmax_half_rows.py"), "incorrect", None),
}


@pytest.fixture(scope="module")
def suite_bench(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, BenchResult]:
    """The six files judged once for the module: (store, folder, result)."""
    root = tmp_path_factory.mktemp("bench")
    folder = root / "solutions"
    for relative, (source, _, _) in SUITE.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, folder / relative)
    with RunStore(root / "runs.db") as store:
        return root / "runs.db", folder, bench_folder(store, folder, options=QUICK)


def view(store_path: Path, run_id: str) -> RunView:
    with RunStore(store_path) as store:
        return load_run(store, run_id)


@pytest.mark.slow
def test_a_folder_of_honest_and_cheating_kernels(suite_bench: tuple[Path, Path, BenchResult]) -> None:
    store_path, folder, result = suite_bench
    assert (result.counts.judged, result.counts.cached) == (6, 0)
    bench = view(store_path, result.run_id)
    by_file = {str(Path(a.label).relative_to(folder.resolve())): a for a in bench.attempts}
    assert set(by_file) == set(SUITE)
    for relative, (_, status, rule) in SUITE.items():
        verdict = by_file[relative].verdict
        assert verdict is not None and verdict.status == status, f"{relative}: {verdict}"
        assert rule_broken(verdict) == rule, f"{relative}: {verdict.reason}"
    summary = bench.summary
    assert (summary.attempts, summary.tasks, summary.correct) == (6, 2, 2)
    assert summary.correctness_rate == pytest.approx(2 / 6)
    assert summary.statuses == {"correct": 2, "incorrect": 1, "rejected": 3}
    assert summary.rules == {"input-mutation": 1, "tampering": 1, "pytorch-compute": 1}
    # fast_p counts the correct kernels faster than p× eager PyTorch over all six files.
    speedups = {
        r: speedup_of(by_file[r].verdict) for r in ("level1/relu/honest.py", "level1/softmax/honest.py")
    }
    eager = summary.baselines["eager"]
    for p, value in eager.fast_p.items():
        threshold = float(p.removeprefix("fast_"))
        assert value == pytest.approx(sum(s is not None and s > threshold for s in speedups.values()) / 6), p
    # Both correct kernels were timed (how fast a C kernel is on a shared CPU is the timing's business;
    # fast_p is checked against whatever was measured, above).
    relu, softmax = speedups["level1/relu/honest.py"], speedups["level1/softmax/honest.py"]
    assert relu is not None and relu > 0 and softmax is not None and softmax > 0, speedups
    assert eager.fast_p["fast_0"] == pytest.approx(2 / 6)
    assert eager.geomean_speedup == pytest.approx((relu * softmax) ** 0.5)
    # Nothing waits on a build: the four files whose import compiles C went to the build pool first.
    with RunStore(store_path) as store:
        summary_stored = store.run(result.run_id).summary
    assert summary_stored is not None
    builds = summary_stored["executor"]["builds"]
    assert builds["built"] + builds["failed"] == 4, builds


@pytest.mark.slow
def test_a_bench_resumes_and_reuses_verdicts(suite_bench: tuple[Path, Path, BenchResult]) -> None:
    store_path, folder, first = suite_bench

    class Stop(Exception):
        pass

    def stop_after_one(candidate: CandidateRecord, cached: bool) -> None:
        raise Stop

    with RunStore(store_path) as store:
        with pytest.raises(Stop):
            bench_folder(store, folder, options=QUICK, on_verdict=stop_after_one)
        stopped = store.runs(kind="bench")[-1]
        assert stopped.id != first.run_id and stopped.status == "stopped"
        assert sum(c.verdict is not None for c in store.candidates(stopped.id)) == 1
        verdicts_before = len(store.verdicts(first.run_id))
        resumed = bench_folder(store, resume=stopped.id)
        # Nothing is judged again: the first bench's verdicts are in the store's evaluation cache.
        assert (resumed.run_id, resumed.counts.judged, resumed.counts.cached) == (stopped.id, 0, 6)
        assert len(store.verdicts(first.run_id)) == verdicts_before
        assert store.run(stopped.id).status == "finished"
    again = view(store_path, stopped.id).summary
    assert again.statuses == view(store_path, first.run_id).summary.statuses


@pytest.mark.slow
def test_the_bench_command_prints_the_summary(suite_bench: tuple[Path, Path, BenchResult]) -> None:
    store_path, folder, _ = suite_bench
    done = run_cli(
        "bench", str(folder), "--device", "cpu", "--seeds", "1", "--store", str(store_path), "--json"
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["correctness_rate"] == pytest.approx(2 / 6)
    assert summary["rules"] == {"input-mutation": 1, "tampering": 1, "pytorch-compute": 1}
    assert "rejected      level1/relu in_place.py: input-mutation" in done.stderr.replace("\n", " ")


@pytest.mark.slow
def test_a_kernelbench_run_is_rejudged_against_its_checkout(tmp_path: Path) -> None:
    checkout = fake_kernelbench(tmp_path / "KernelBench-checkout")
    run = tmp_path / "runs" / "level1_run"
    run.mkdir(parents=True)
    for name, source in (
        ("level_1_problem_19_sample_0_kernel.py", "honest_relu.py"),
        ("level_1_problem_19_sample_1_kernel.py", "mutate_in_place.py"),
        ("level_1_problem_2_sample_0_kernel.py", "vector_add_cpu.py"),
        ("level_1_problem_2_sample_1_kernel.py", "torch_operator.py"),
    ):
        shutil.copy(solution(source), run / name)
    # What KernelBench's own evaluator said: every kernel but one correct.
    claims = {
        "19": [{"sample_id": 0, "correctness": True}, {"sample_id": 1, "correctness": True}],
        "2": [{"sample_id": 0, "correctness": True}, {"sample_id": 1, "correctness": False}],
    }
    (run / "eval_results.json").write_text(json.dumps(claims))
    with RunStore(tmp_path / "runs.db") as store:
        result = bench_folder(
            store, run, checkout, EvalOptions(device="cpu", seeds_per_config=1, timing=False)
        )
        bench = load_run(store, result.run_id)
    statuses = {(a.task, a.sample): a.status for a in bench.attempts}
    assert statuses == {
        ("kernelbench/level1/19_ReLU", 0): "correct",
        ("kernelbench/level1/19_ReLU", 1): "rejected",
        ("kernelbench/level1/2_Add", 0): "correct",
        ("kernelbench/level1/2_Add", 1): "rejected",
    }
    summary = bench.summary
    assert (summary.claimed_correct, summary.held_up) == (3, 2)
    assert summary.claimed_fell == {"rejected: input-mutation": 1}
    assert summary.rules == {"input-mutation": 1, "pytorch-compute": 1}
    assert (
        bench.run.options["layout"] == "kernelbench"
        and bench.run.task == "kernelbench/level1/19_ReLU, kernelbench/level1/2_Add"
    )


@pytest.mark.slow
def test_bad_bench_input_is_one_line(tmp_path: Path) -> None:
    done = run_cli("bench", str(tmp_path / "missing"), "--device", "cpu", "--store", str(tmp_path / "r.db"))
    assert done.returncode == 2 and done.stderr.startswith("error: solution folder not found")
    resumed = run_cli("bench", "--resume", "bench-nope", "--device", "cpu", "--store", str(tmp_path / "r.db"))
    assert resumed.returncode == 2 and "no run store at" in resumed.stderr, "going on never makes a store"
    RunStore(tmp_path / "r.db").close()
    resumed = run_cli("bench", "--resume", "bench-nope", "--store", str(tmp_path / "r.db"))
    assert resumed.returncode == 2 and "no run 'bench-nope'" in resumed.stderr


@pytest.mark.slow
def test_a_rejections_rule_holds_however_its_reason_is_worded(
    suite_bench: tuple[Path, Path, BenchResult], tmp_path: Path
) -> None:
    """The judge rewords every message of the bench's verdicts: bench's summary and `report` count the same
    rules, read from each verdict's `rule`, never from its words."""
    store_path, _, result = suite_bench
    reworded = tmp_path / "reworded.db"
    with sqlite3.connect(store_path) as source, sqlite3.connect(reworded) as copy:
        source.backup(copy)
    with sqlite3.connect(reworded) as db:
        db.row_factory = sqlite3.Row
        for row in db.execute("SELECT * FROM verdicts WHERE run_id = ?", (result.run_id,)).fetchall():
            columns = {name: row[name] for name in VERDICT_COLUMNS}
            verdict = json.loads(columns["verdict"])
            verdict["reason"] = f"the judge said this in other words ({row['id']})"
            for config in verdict["configs"]:
                config["reason"] = "in other words too"
            columns["verdict"] = json.dumps(verdict)
            db.execute(
                "UPDATE verdicts SET verdict = ?, mac = ? WHERE id = ?",
                (columns["verdict"], verdict_mac(columns), row["id"]),
            )
    expected = {"input-mutation": 1, "tampering": 1, "pytorch-compute": 1}
    assert view(reworded, result.run_id).summary.rules == expected
    done = run_cli("report", result.run_id, "--store", str(reworded))
    assert done.returncode == 0, done.stderr
    shown = " ".join(done.stdout.split())
    for rule in expected:
        assert f"rejected 1× for {rule}" in shown, shown
    assert "for other" not in shown
