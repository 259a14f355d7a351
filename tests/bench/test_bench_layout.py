"""Finding the solutions in a folder: the built-in suite's layout and KernelBench's run layout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cudasmith.bench.layout import discover
from cudasmith.errors import UsageError

from solution_folders import EXPLOITS, fake_kernelbench, solution


def test_suite_layout_maps_folders_to_tasks_and_counts_samples(tmp_path: Path) -> None:
    for relative, source in (
        ("level1/relu/a.py", "honest_relu.py"),
        ("level1/relu/b.py", "mutate_in_place.py"),
        ("level1/softmax/a.py", "torch_softmax.py"),
        ("level1/no_such_task/a.py", "honest_relu.py"),
    ):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(EXPLOITS / source, tmp_path / relative)
    found = discover(tmp_path)
    assert found.layout == "suite"
    assert sorted(found.problems) == ["level1/relu", "level1/softmax"]
    assert [(s.task, s.sample, s.solution.name) for s in found.submissions] == [
        ("level1/relu", 0, "a.py"),
        ("level1/relu", 1, "b.py"),
        ("level1/softmax", 0, "a.py"),
    ]
    assert [(p.name, why) for p, why in found.unmatched] == [
        ("a.py", "level1/no_such_task is not a built-in task (cudasmith tasks)")
    ]
    # The level folder itself works too.
    assert len(discover(tmp_path / "level1").submissions) == 3


def test_kernelbench_run_layout_with_its_claims(tmp_path: Path) -> None:
    checkout = fake_kernelbench(tmp_path / "checkout")
    run = tmp_path / "runs" / "my_run"
    run.mkdir(parents=True)
    for name, source in (
        ("level_1_problem_19_sample_0_kernel.py", "honest_relu.py"),
        ("level_1_problem_19_sample_1_kernel.py", "mutate_in_place.py"),
        ("level_1_problem_2_sample_0_kernel.py", "vector_add_cpu.py"),
        ("level_1_problem_7_sample_0_kernel.py", "honest_relu.py"),
        ("level_4_problem_1_sample_0_kernel.py", "honest_relu.py"),
    ):
        shutil.copy(solution(source), run / name)
    claims = {"19": [{"sample_id": 0, "correctness": True}, {"sample_id": 1, "correctness": True}]}
    (run / "eval_results.json").write_text(json.dumps(claims))
    found = discover(run, checkout)
    assert found.layout == "kernelbench"
    assert [(s.task, s.sample, s.claimed_correct) for s in found.submissions] == [
        ("kernelbench/level1/2_Add", 0, None),
        ("kernelbench/level1/19_ReLU", 0, True),
        ("kernelbench/level1/19_ReLU", 1, True),
    ]
    why = {p.name: reason for p, reason in found.unmatched}
    assert "has no level 1 problem 7" in why["level_1_problem_7_sample_0_kernel.py"]
    assert "from_pretrained" in why["level_4_problem_1_sample_0_kernel.py"]


def test_kernelbench_kernels_need_the_checkout(tmp_path: Path) -> None:
    shutil.copy(EXPLOITS / "honest_relu.py", tmp_path / "level_1_problem_19_sample_0_kernel.py")
    with pytest.raises(UsageError, match="--from KERNELBENCH_CHECKOUT"):
        discover(tmp_path)
    with pytest.raises(UsageError, match="problem directory not found"):
        discover(tmp_path, tmp_path / "nowhere")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "model.py").write_text("")
    with pytest.raises(UsageError, match="not a KernelBench checkout"):
        discover(tmp_path, tmp_path / "other")


def test_a_folder_with_nothing_to_judge_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not found"):
        discover(tmp_path / "missing")
    with pytest.raises(UsageError, match=r"no solution files"):
        discover(tmp_path)
    (tmp_path / "misc").mkdir()
    (tmp_path / "misc" / "a.py").write_text("")
    with pytest.raises(UsageError, match="TASK_NAME/"):
        discover(tmp_path)
