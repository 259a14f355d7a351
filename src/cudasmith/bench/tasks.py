"""The tasks a bench of a model covers: a level, named tasks, or the problems of a KernelBench checkout."""

from __future__ import annotations

from pathlib import Path

from cudasmith.errors import UsageError
from cudasmith.tasks.catalog import level_of
from cudasmith.tasks.directory import load_problem_dir
from cudasmith.tasks.problem import Problem, close_names, list_task_names, load_problem, load_task


def _in_level(name: str, level: str) -> bool:
    wanted = level.strip("/")
    return level_of(name) == wanted or level_of(name).endswith(f"/{wanted}")


def select_problems(level: str | None, names: list[str], kernelbench: Path | None = None) -> list[Problem]:
    """The problems of `level` and of `names` (built-in tasks, problem files, or with `kernelbench` a
    checkout's problems by full name or by file stem such as 19_ReLU), in suite order, each once."""
    if kernelbench is not None:
        available: dict[str, Problem | None] = {p.name: p for p in load_problem_dir(kernelbench).problems}
    else:
        available = {name: None for name in list_task_names()}
    return [
        found
        if isinstance(found, Problem)
        else load_problem(found)
        if isinstance(found, Path)
        else load_task(name)
        for name, found in _chosen(level, names, available).items()
    ]


def check_tasks(level: str | None, names: list[str]) -> None:
    """That `level` and `names` choose built-in tasks (or problem files), checked without loading any
    (nothing of torch: a usage error, a misspelt name's did-you-mean included, comes at once)."""
    _chosen(level, names, {name: None for name in list_task_names()})


def _chosen(
    level: str | None, names: list[str], available: dict[str, Problem | None]
) -> dict[str, Problem | Path | None]:
    """The tasks chosen of those `available` (loaded, or None for a built-in task not loaded yet), and
    the problem files named, each once."""
    if level is None and not names:
        raise UsageError("choose the tasks: --level LEVEL, or --task NAME (repeatable)")
    chosen: dict[str, Problem | Path | None] = {}
    if level is not None:
        chosen.update({n: p for n, p in available.items() if _in_level(n, level)})
        if not chosen:
            raise UsageError(f"no tasks in level {level!r} (cudasmith tasks lists the levels)")
    for name in names:
        match = [n for n in available if n == name or n.rsplit("/", 1)[-1] == name]
        if match:
            chosen.setdefault(match[0], available[match[0]])
        elif name.endswith(".py") and Path(name).is_file():
            chosen.setdefault(name, Path(name))
        else:
            hint = close_names(name, list(available))
            raise UsageError(
                f"unknown task {name!r}; {hint}`cudasmith tasks` lists them (a problem file ends in .py)"
            )
    return chosen
