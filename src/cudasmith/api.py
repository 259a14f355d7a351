"""The Python entry points behind the CLI."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from cudasmith.harness.options import EvalOptions, Progress, default_device
from cudasmith.harness.session import Judge, resolve_problem
from cudasmith.harness.session import evaluate as run_evaluation
from cudasmith.harness.verdict import Verdict
from cudasmith.tasks.problem import Problem

__all__ = ["Judge", "default_device", "evaluate", "resolve_problem"]


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

    To judge many solutions of one task, a session (`cudasmith.Judge`) is several times faster.
    """
    loaded = resolve_problem(task, problem)
    options = options or EvalOptions(device=overrides.pop("device", None) or default_device())
    return run_evaluation(solution, loaded, replace(options, **overrides), progress)
