"""What a task is, for people and programs: its row in a listing and the levels tasks fall in (the
judge's figures of a task, tolerance and roofline, are cudasmith.harness.task_details).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import NotRequired, TypedDict

from cudasmith.tasks.problem import Problem

# What every task is timed against; a task's EXPERT adds itself (cudasmith.harness.baselines names them).
BASELINES = ("eager", "compile", "compile-max-autotune")


def level_of(name: str) -> str:
    """'level1' for 'level1/softmax', 'kernelbench/level1' for 'kernelbench/level1/19_ReLU'."""
    return name.rsplit("/", 1)[0] if "/" in name else ""


def in_level(name: str, level: str) -> bool:
    """Whether task `name` is in `level`: 'level1' holds level1/x and kernelbench/level1/x."""
    wanted, found = level.strip("/"), level_of(name)
    return found == wanted or found.endswith(f"/{wanted}")


def baselines(problem: Problem) -> list[str]:
    """What a candidate is timed against: eager PyTorch, torch.compile (two modes), and the EXPERT if any."""
    return [*BASELINES, *(["expert"] if problem.expert else [])]


class TaskRow(TypedDict):
    """One task as `cudasmith tasks` lists it (and its JSON)."""

    name: str
    level: str
    dtype: str | None
    configs: int
    hidden_configs: int
    validator: bool
    expert: str | None
    baselines: list[str]
    l2_state: str
    description: str


class TaskListing(TypedDict):
    """`cudasmith tasks --json`: tasks per level, how many, the tasks, and (for a folder of problems) the
    files that were not loaded (each with its status, name, path and why)."""

    counts: dict[str, int]
    total: int
    tasks: list[TaskRow]
    unloaded: NotRequired[list[dict[str, str]]]


def task_row(problem: Problem) -> TaskRow:
    """One task as a listing shows it."""
    return {
        "name": problem.name,
        "level": level_of(problem.name),
        "dtype": problem.dtype,
        "configs": len(problem.configs),
        "hidden_configs": len(problem.hidden_configs),
        "validator": problem.has_validate,
        "expert": problem.expert,
        "baselines": baselines(problem),
        "l2_state": problem.l2_state,
        "description": problem.description,
    }


def level_counts(problems: Iterable[Problem]) -> dict[str, int]:
    """How many tasks each level holds, levels in name order."""
    return dict(sorted(Counter(level_of(p.name) for p in problems).items()))
