"""The Python entry points behind the CLI."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from cudasmith.device import default_device, usable_device
from cudasmith.harness.options import EvalOptions, Progress
from cudasmith.harness.session import Judge, resolve_problem
from cudasmith.harness.session import evaluate as run_evaluation
from cudasmith.harness.verdict import Verdict
from cudasmith.tasks.problem import Problem

__all__ = ["Judge", "default_device", "evaluate", "resolve_problem"]

# Said in a verdict judged on the CPU because the caller named no device and no GPU is visible.
NO_GPU_NOTE = "judged on the CPU: no device was named and no CUDA GPU is visible here"


def evaluate(
    solution: str | Path,
    task: str | None = None,
    problem: str | Path | Problem | None = None,
    options: EvalOptions | None = None,
    progress: Progress | None = None,
    problem_dir: str | Path | None = None,
    **overrides: Any,
) -> Verdict:
    """Judge `solution` against a task (built-in, or of `problem_dir`) or a problem file; keyword overrides
    set EvalOptions fields.

    verdict = cudasmith.evaluate("my_softmax.py", task="level1/softmax", device="cpu")

    Without a device (neither `device=` nor `options`), it judges on the GPU, or on the CPU when no GPU
    is visible, and then the verdict's notes say so (the CLI refuses to guess: it asks for --device cpu).
    To judge many solutions of one task, a session (`cudasmith.Judge`) is several times faster.
    """
    loaded = resolve_problem(task, problem, problem_dir)
    device = overrides.pop("device", None)
    guessed = options is None and device is None
    options = options or EvalOptions()
    options = replace(options, device=usable_device(device or (None if guessed else options.device)))
    verdict = run_evaluation(solution, loaded, replace(options, **overrides), progress)
    if guessed and options.device == "cpu":
        verdict.note(NO_GPU_NOTE)
    return verdict
