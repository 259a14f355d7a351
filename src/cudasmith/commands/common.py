"""What every command shares: exit codes, one-line errors, the device a command uses, the problem it
names. Heavy imports stay inside functions: `--help` must not import torch."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console

from cudasmith.errors import CudasmithError, UsageError

if TYPE_CHECKING:
    from cudasmith.tasks.problem import Problem

stderr = Console(stderr=True)

# Exit codes of the verdict contract.
EXIT_CORRECT, EXIT_VERDICT, EXIT_USAGE = 0, 1, 2


@contextmanager
def one_line_errors() -> Iterator[None]:
    """Bad input ends a command with one line on stderr and exit code 2, never a traceback."""
    try:
        yield
    except CudasmithError as exc:
        fail(str(exc))
    except ImportError as exc:
        fail(f"a package is missing: {exc.name} (pip install cudasmith installs it)")


def guarded(command: Callable[..., None]) -> Callable[..., None]:
    """The command with one-line errors around its body (what `cli.py` registers)."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> None:
        with one_line_errors():
            command(*args, **kwargs)

    return run


def fail(message: str) -> NoReturn:
    """End the command: `error: message` on stderr, exit code 2."""
    say_error(message)
    raise typer.Exit(EXIT_USAGE)


def say_error(message: str) -> None:
    """`error: message` on stderr, the one style of every error: one line when piped; in a terminal,
    wrapped at its width under the message's first word, rather than cut mid-word by the terminal."""
    from rich.table import Table
    from rich.text import Text

    # Text, never markup: "[llm.openai]" stays as written and "openai:x:" is no emoji.
    label = Text("error:", style="bold red")
    if stderr.is_terminal:
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column()
        grid.add_row(label, Text(message))
        stderr.print(grid)
    else:
        stderr.print(Text.assemble(label, " ", message), soft_wrap=True)


@contextmanager
def working(what: str) -> Iterator[None]:
    """Say what is being done while it is: a spinner in a terminal, else a line on stderr."""
    from rich.text import Text

    if stderr.is_terminal:
        with stderr.status(what, spinner="dots"):
            yield
    else:
        stderr.print(Text(what), soft_wrap=True)
        yield


def command_device(device: str | None, judging: bool) -> str:
    """The device a command uses: the one named, else the GPU. Without a GPU, a command that judges or
    asks a model refuses (a solution or a prompt for the GPU would fail on the CPU for reasons that have
    nothing to do with it); one that only describes (show, prompt, device) describes the CPU and says so."""
    from cudasmith.device import NO_GPU, NO_GPU_ERROR, default_device, usable_device

    if device is not None:
        return usable_device(device)
    if default_device() == "cuda":
        return "cuda"
    if judging:
        raise UsageError(NO_GPU_ERROR)
    stderr.print(f"[dim]note: {NO_GPU}; using the CPU (--device cpu chooses it without this note)[/]")
    return "cpu"


def pick_problem(
    named: str | None, task: str | None, problem: Path | None, problem_dir: Path | None
) -> Problem:
    """The problem of a command that takes TASK (a name or a file), --task NAME or --problem FILE."""
    from cudasmith.tasks.problem import load_problem

    return load_problem(*pick_problem_file(named, task, problem, problem_dir))


def pick_problem_file(
    named: str | None, task: str | None, problem: Path | None, problem_dir: Path | None
) -> tuple[Path, str | None]:
    """What pick_problem loads, found without importing torch (a usage error comes at once): the problem's
    file and its name."""
    from cudasmith.tasks.lookup import find_named_file, find_problem_file

    if named is not None and (task is not None or problem is not None):
        raise UsageError(f"give the task once: {named!r} or --task/--problem, not both")
    if named is not None:
        return find_named_file(named, problem_dir)
    return find_problem_file(task, problem, problem_dir)


def solution_files(paths: list[Path]) -> list[Path]:
    """The solution files named: files as given (each a .py file), folders as their *.py files in name
    order."""
    from cudasmith.tasks.problem import solution_file

    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            inside = sorted(p for p in path.glob("*.py") if p.is_file())
            if not inside:
                raise UsageError(f"{path} is a folder with no solution files (*.py) in it")
            found += inside
        else:
            found.append(solution_file(path))
    return found
