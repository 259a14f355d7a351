"""A session computes the cascade's first pass of reference outputs ahead (session.py: on a GPU, while its first
candidate's worker starts): the same inputs the candidate's checks then ask for, module parameters drawn
where the config has any, so that the first verdict does not wait for them one by one."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudasmith.harness.options import EvalOptions
from cudasmith.harness.session import Judge
from cudasmith.harness.wire.messages import InputSpec
from cudasmith.harness.wire.status import Status
from cudasmith.harness.witnesses.oracle import Oracle

from conftest import PROBLEMS, ROOT, SOLUTIONS

QUICK = EvalOptions(device="cpu", seeds_per_config=1, timing=False)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("problem", "solution"),
    [
        (PROBLEMS / "add_small.py", SOLUTIONS / "vector_add_cpu.py"),
        (PROBLEMS / "linear_groupnorm_mean.py", SOLUTIONS / "kernelbench" / "linear_groupnorm_mean_c.py"),
    ],
)
def test_the_references_made_ahead_are_those_the_first_candidate_asks_for(
    problem: Path, solution: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[InputSpec] = []
    original = Oracle.reference

    def reference(self: Oracle, spec: InputSpec, name: str) -> object:
        asked.append(spec)
        return original(self, spec, name)

    monkeypatch.setattr(Oracle, "reference", reference)
    with Judge(problem, QUICK, candidates=1) as judge:
        judge._references_ahead()  # on a GPU a thread of the session's start does this
        ahead = list(asked)
        verdict = judge.judge(solution)
        marks = judge.startup.marks()
    assert verdict.status == Status.CORRECT
    assert ahead and "first references made ahead" in marks
    checked = asked[len(ahead) :]
    assert ahead == checked[: len(ahead)], "the candidate's first pass asks for exactly what was made ahead"


@pytest.mark.gpu
def test_on_a_gpu_a_session_makes_its_first_references_ahead_by_itself() -> None:
    kernel = ROOT / "benchmarks" / "optimize_gpu_kernels" / "full_grid.py"
    with Judge(
        task="level1/vector_add", options=EvalOptions(device="cuda", baselines=("eager",)), candidates=1
    ) as judge:
        verdict = judge.judge(kernel)
        marks = judge.startup.marks()
    assert verdict.status == Status.CORRECT
    assert "first references made ahead" in marks, marks
