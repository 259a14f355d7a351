"""Finding a problem by what a user calls it: a built-in task's name, a problem file, or a name that
`cudasmith tasks --from DIR` listed (found again in the same directory).

Every command and the Python API resolve problems here, so a name one command prints, the others take.
"""

from __future__ import annotations

from pathlib import Path

from cudasmith.errors import UsageError
from cudasmith.tasks.directory import KERNELBENCH, problem_files
from cudasmith.tasks.problem import Problem, close_names, list_task_names, load_problem, task_path


def problem_in_dir(directory: str | Path, name: str) -> Problem:
    """The problem `name` of a problem directory: its full listed name (`kernelbench/level1/19_ReLU`) or
    an unambiguous end of it (`level1/19_ReLU`)."""
    return load_problem(*file_in_dir(directory, name))


def file_in_dir(directory: str | Path, name: str) -> tuple[Path, str]:
    """The file of problem `name` of a problem directory, and its full listed name, not loaded."""
    files = problem_files(directory)
    matches = [(listed, path) for listed, path in files if listed == name]
    matches = matches or [(listed, path) for listed, path in files if listed.endswith(f"/{name}")]
    if len(matches) == 1:
        listed, path = matches[0]
        return Path(path), listed
    if matches:
        names = ", ".join(listed for listed, _ in matches[:4])
        raise UsageError(
            f"{name!r} names {len(matches)} problems in {directory}: {names}; give the full name"
        )
    hint = close_names(name, [listed for listed, _ in files])
    raise UsageError(
        f"no problem {name!r} in {directory}; {hint}`cudasmith tasks --from {directory}` lists them"
    )


def find_problem(
    task: str | None = None, problem: str | Path | None = None, problem_dir: str | Path | None = None
) -> Problem:
    """The problem named by a task name (built-in, or of `problem_dir`) or a problem file: exactly one."""
    return load_problem(*find_problem_file(task, problem, problem_dir))


def find_problem_file(
    task: str | None = None, problem: str | Path | None = None, problem_dir: str | Path | None = None
) -> tuple[Path, str | None]:
    """What find_problem loads, read from the disk only (nothing of torch): the problem's file and its
    name (None: the file's stem)."""
    if (task is None) == (problem is None):
        raise UsageError("give exactly one of a task name (--task) or a problem file (--problem)")
    if problem is not None:
        if problem_dir is not None:
            raise UsageError("--from DIR goes with a task name from that directory, not with --problem FILE")
        if not Path(problem).is_file():
            raise UsageError(f"problem file not found: {problem}")
        return Path(problem), None
    assert task is not None
    if problem_dir is not None:
        return file_in_dir(problem_dir, task)
    listing_name = task.count("/") > 1 or task.startswith(f"{KERNELBENCH}/")
    if listing_name and task not in list_task_names():
        raise UsageError(
            f"unknown task {task!r}: a name that `cudasmith tasks --from DIR` lists needs that --from DIR too"
        )
    return task_path(task), task


def find_named(name: str | Path, problem_dir: str | Path | None = None) -> Problem:
    """A TASK argument: a problem file's path, or a task name (built-in, or of `problem_dir`)."""
    return load_problem(*find_named_file(name, problem_dir))


def find_named_file(name: str | Path, problem_dir: str | Path | None = None) -> tuple[Path, str | None]:
    """What find_named loads, read from the disk only (nothing of torch): the file and its name."""
    path = Path(name)
    if isinstance(name, Path) or path.suffix == ".py" or path.is_file():
        return find_problem_file(problem=path, problem_dir=problem_dir)
    return find_problem_file(task=str(name), problem_dir=problem_dir)
