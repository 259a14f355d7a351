"""Re-judging a KernelBench run: answers that are zero, module parameters drawn by the judge, builds in
constructors, rules named (strict or KernelBench's), and the summary of what holds up."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from cudasmith import EvalOptions, evaluate
from cudasmith.bench.folder import bench_folder
from cudasmith.harness.verdict import Verdict
from cudasmith.harness.workers.check import compare, tolerance_for
from cudasmith.report.rejudge import CUSTOM, MIXED, REWRITE, kind_of, rejudged, summarize_rejudge
from cudasmith.store import RunStore
from cudasmith.tasks.parameters import drawn_values, matching
from cudasmith.tasks.problem import load_module

from conftest import PROBLEMS, SOLUTIONS, run_cli
from solution_folders import RELU_PROBLEM, solution

KERNELBENCH_SOLUTIONS = SOLUTIONS / "kernelbench"
ZERO_PROBLEM = PROBLEMS / "linear_groupnorm_mean.py"
QUICK = {"device": "cpu", "timing": False, "seeds_per_config": 1}
# The re-judge of the run: timed (a cache keyed by input address is caught on timed calls), one input set.
RULES_KERNELBENCH = EvalOptions(device="cpu", seeds_per_config=1, rules="kernelbench")


def test_an_answer_that_is_zero_is_judged_on_the_computations_scale() -> None:
    generator = torch.Generator().manual_seed(0)
    truth = torch.randn(64, generator=generator, dtype=torch.float64) * 1e-17
    reference = truth.float()  # the task dtype holds these values exactly: its own error is nil
    honest = (truth + torch.randn(64, generator=generator, dtype=torch.float64) * 1e-8).float()
    tolerance = tolerance_for(torch.float32, {})
    assert not compare(honest, reference, truth, tolerance).ok  # relative to round-off: 1e9 "off"
    judged = compare(honest, reference, truth, tolerance, scale=1.0)
    assert judged.ok and "zero up to round-off" in judged.reason
    wrong = (truth + 1e-2).float()
    assert not compare(wrong, reference, truth, tolerance, scale=1.0).ok


def test_drawn_parameters_match_by_name_or_position_and_are_the_same_everywhere() -> None:
    class Renamed(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.empty(32, 24))
            self.bias = torch.nn.Parameter(torch.empty(32))
            self.gamma = torch.nn.Parameter(torch.empty(32))
            self.beta = torch.nn.Parameter(torch.empty(32))

    problem = load_module(ZERO_PROBLEM, "zero_problem")
    model = problem.Model(*problem.get_init_inputs())
    assert matching(model, problem.Model(*problem.get_init_inputs())) == [0, 1, 2, 3]
    assert matching(model, Renamed()) == [0, 1, 2, 3]
    assert "ModelNew has parameters 0" in str(matching(model, torch.nn.Module()))
    first, again = drawn_values(model, 7), drawn_values(model, 7)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    norm_weight = first[2]
    assert float(norm_weight.std()) > 0.1  # a norm's weight of ones is no longer constant


def test_what_a_verdict_makes_of_a_kernel() -> None:
    def kind(**data: object) -> str:
        return kind_of(Verdict.from_dict(data))

    correct = {"status": "correct", "reason": "", "torch_ops": {"aten::addmm": 3}}
    assert kind(**correct, own_share=0.97) == CUSTOM
    assert kind(**correct, own_share=0.3) == MIXED  # a fused epilogue after PyTorch's GEMM
    assert kind(**correct, own_share=0.0) == REWRITE
    assert kind(**correct) == REWRITE and kind(status="correct", reason="") == CUSTOM  # untimed
    rejected = {
        "status": "rejected",
        "reason": "unsynchronised side stream: kernel add was …",
        "rule": "side-stream",
    }
    assert kind(**rejected) == "rejected: side-stream"
    assert kind(**{**rejected, "reason": "said in other words"}) == "rejected: side-stream"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("solution_name", "drawn", "status", "says"),
    [
        ("linear_groupnorm_mean_c.py", False, "correct", "zero up to round-off"),
        ("linear_groupnorm_mean_c.py", True, "correct", "drawn by the judge"),
        ("linear_groupnorm_mean_zeros.py", True, "incorrect", "values differ"),
        ("linear_groupnorm_mean_zeros_bare.py", True, "incorrect", "could not draw them"),
        ("linear_groupnorm_mean_defaults.py", True, "incorrect", "values differ"),
    ],
)
def test_a_problem_whose_answer_is_zero(solution_name: str, drawn: bool, status: str, says: str) -> None:
    verdict = evaluate(
        KERNELBENCH_SOLUTIONS / solution_name,
        problem=ZERO_PROBLEM,
        options=EvalOptions(**QUICK, drawn_parameters=drawn),
    )
    assert verdict.status == status, verdict.reason
    assert says in " ".join([verdict.reason, str(verdict.parameters), *verdict.notes])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("solution_name", "says"),
    [
        ("relu_built_in_constructor.py", "constructor took"),
        ("relu_built_on_first_call.py", "first call builds"),
    ],
)
def test_a_build_longer_than_a_call_may_take_is_a_build(solution_name: str, says: str) -> None:
    verdict = evaluate(
        KERNELBENCH_SOLUTIONS / solution_name,
        task="level1/relu",
        options=EvalOptions(**QUICK, call_timeout_s=2.0, first_call_extra_s=0.0),
    )
    assert verdict.correct, verdict.reason
    assert verdict.build_s is not None and verdict.build_s >= 3.0
    assert any(says in note for note in verdict.notes), verdict.notes


def fake_checkout(root: Path) -> Path:
    """KernelBench's layout with problems of our own: a ReLU, a diagonal matmul, a zero-answer fusion."""
    level1, level2 = root / "KernelBench" / "level1", root / "KernelBench" / "level2"
    level1.mkdir(parents=True)
    level2.mkdir()
    (level1 / "19_ReLU.py").write_text(RELU_PROBLEM)
    shutil.copy(PROBLEMS / "diag_matmul.py", level1 / "12_Diag_Matmul.py")
    shutil.copy(ZERO_PROBLEM, level2 / "23_Linear_GroupNorm_Mean.py")
    return root


# Kernel file of the run → (its source, what the re-judge under KernelBench's rules makes of it).
RUN = {
    "level_1_problem_12_sample_0_kernel.py": (KERNELBENCH_SOLUTIONS / "diag_matmul_broadcast.py", REWRITE),
    "level_1_problem_19_sample_0_kernel.py": (KERNELBENCH_SOLUTIONS / "relu_built_in_constructor.py", CUSTOM),
    "level_1_problem_19_sample_1_kernel.py": (solution("cache_by_address.py"), None),
    "level_2_problem_23_sample_0_kernel.py": (KERNELBENCH_SOLUTIONS / "linear_groupnorm_mean_c.py", CUSTOM),
    "level_2_problem_23_sample_1_kernel.py": (
        KERNELBENCH_SOLUTIONS / "linear_groupnorm_mean_zeros.py",
        "incorrect",
    ),
    "level_2_problem_23_sample_2_kernel.py": (
        KERNELBENCH_SOLUTIONS / "linear_groupnorm_mean_defaults.py",
        "incorrect",
    ),
}


@pytest.fixture(scope="module")
def kernelbench_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A run whose authors called every kernel correct and fast: (checkout, run folder, store)."""
    root = tmp_path_factory.mktemp("rejudge")
    checkout = fake_checkout(root / "checkout")
    run = root / "runs" / "claimed_all_correct"
    run.mkdir(parents=True)
    claims: dict[str, list[dict[str, object]]] = {}
    for name, (source, _) in RUN.items():
        shutil.copy(source, run / name)
        problem_id, sample = name.split("_")[3], int(name.split("_")[5])
        claims.setdefault(problem_id, []).append({"sample_id": sample, "correctness": True, "runtime": 0.5})
    (run / "eval_results.json").write_text(json.dumps(claims))
    baselines = {
        "level1": {"12_Diag_Matmul.py": {"mean": 2.0}},
        "level2": {"23_Linear_GroupNorm_Mean.py": {"mean": 1.0}},
    }
    (run / "baseline_time_torch.json").write_text(json.dumps(baselines))
    return checkout, run, root / "runs.db"


@pytest.mark.slow
def test_a_kernelbench_run_rejudged_under_its_own_rules(kernelbench_run: tuple[Path, Path, Path]) -> None:
    checkout, run, store_path = kernelbench_run
    with RunStore(store_path) as store:
        result = bench_folder(store, run, checkout, RULES_KERNELBENCH)
        candidates = store.candidates(result.run_id)
        kernels = rejudged(candidates)
    notes = {Path(c.path or c.key).name: c.verdict.notes if c.verdict else None for c in candidates}
    by_file = {kernel.file: kernel for kernel in kernels}
    for name, (_, expected) in RUN.items():
        kernel = by_file[name]
        if expected is None:  # the output cache: caught, by a wrong value or on a timed call
            assert kernel.status in ("incorrect", "rejected"), kernel.reason
        else:
            assert kernel.kind == expected, (name, kernel.reason, kernel.own_share)
            # KernelBench's own check beside ours: it holds where ours does and fails the wrong answers.
            assert kernel.kernelbench_tolerance is (expected != "incorrect"), (name, kernel.reason)
        assert kernel.claimed_correct is True and kernel.rules == "kernelbench"
    rewrite = by_file["level_1_problem_12_sample_0_kernel.py"]
    assert rewrite.torch_ops and rewrite.speedup is not None and rewrite.own_share is not None, notes[
        rewrite.file
    ]
    assert rewrite.claimed_speedup == pytest.approx(4.0)  # the baseline JSON's 2 ms over the claimed 0.5 ms
    summary = summarize_rejudge(kernels)
    assert (summary.claimed_correct, summary.custom_kernels, summary.pytorch_rewrites) == (6, 2, 1)
    assert summary.custom_with_pytorch == 0
    assert sum(summary.wrong_or_cheating.values()) == 3 and summary.wrong_or_cheating["incorrect"] >= 2


@pytest.mark.slow
def test_the_rewrite_is_refused_under_strict_rules(kernelbench_run: tuple[Path, Path, Path]) -> None:
    checkout, run, _ = kernelbench_run
    problem = checkout / "KernelBench" / "level1" / "12_Diag_Matmul.py"
    verdict = evaluate(
        run / "level_1_problem_12_sample_0_kernel.py", problem=problem, options=EvalOptions(**QUICK)
    )
    assert verdict.status == "rejected" and "PyTorch operator" in verdict.reason
    assert verdict.rules == "strict"


@pytest.mark.slow
def test_the_bench_command_prints_the_rejudge(kernelbench_run: tuple[Path, Path, Path]) -> None:
    checkout, run, store_path = kernelbench_run  # judged with RULES_KERNELBENCH: the verdicts are reused
    done = run_cli(
        "bench",
        str(run),
        "--from",
        str(checkout),
        "--device",
        "cpu",
        "--seeds",
        "1",
        "--rules",
        "kernelbench",
        "--store",
        str(store_path),
    )
    assert done.returncode == 0, done.stderr
    assert "Re-judged under kernelbench rules" in done.stdout
    summary_line = " ".join(done.stdout.split())
    assert "Of 6 kernels called correct by the run: custom kernels that hold up 2," in summary_line
    assert "left" in done.stderr  # each verdict line says how many kernels are done and left
