"""The Python entry points behind the CLI."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from cudasmith.errors import UsageError
from cudasmith.harness.runner import EvalOptions, Progress
from cudasmith.harness.runner import evaluate as run_evaluation
from cudasmith.harness.verdict import Verdict
from cudasmith.tasks.problem import Problem, load_problem, load_task


def resolve_problem(task: str | None = None, problem: str | Path | None = None) -> Problem:
    """The problem named by a built-in task name or a problem file (exactly one of the two)."""
    if (task is None) == (problem is None):
        raise UsageError("give exactly one of a task name (--task) or a problem file (--problem)")
    return load_task(task) if task is not None else load_problem(problem)  # type: ignore[arg-type]


def default_device() -> str:
    """'cuda' when a GPU is visible, else 'cpu'."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def evaluate(
    solution: str | Path,
    task: str | None = None,
    problem: str | Path | Problem | None = None,
    options: EvalOptions | None = None,
    progress: Progress | None = None,
    **overrides: Any,
) -> Verdict:
    """Judge `solution` against a built-in task or a problem file; keyword overrides set EvalOptions fields.

    verdict = cudasmith.evaluate("my_softmax.py", task="level1/softmax", device="cpu")
    """
    loaded = problem if isinstance(problem, Problem) else resolve_problem(task, problem)
    options = options or EvalOptions(device=overrides.pop("device", None) or default_device())
    return run_evaluation(solution, loaded, replace(options, **overrides), progress)
