"""What the commands of `cudasmith` share: exit codes, one-line errors, the options every command spells
the same way, and the help rendering. Heavy imports stay inside functions: `--help` must be quick."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from typer.core import TyperGroup

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


def fail(message: str) -> NoReturn:
    """End the command: `error: message` on stderr, exit code 2."""
    from rich.markup import escape

    # The message is text, not markup: "[llm.openai]" stays and "openai:x:" is no emoji.
    stderr.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True, emoji=False)
    raise typer.Exit(EXIT_USAGE)


def _bare_flags(params: list[Any]) -> list[Any]:
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


class CudasmithGroup(TyperGroup):
    """The command group. Typer's help lists a flag as taking a `<bool>` value; here flags (--json,
    --help, …) show no value, on every command, those registered later included."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _bare_flags(super().get_params(ctx))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _bare_flags(command.get_params(ctx))
        return command


def judging_device(device: str | None) -> str:
    """The device to judge on: the one named, or the GPU. Without a GPU the CPU is never guessed: a
    solution written for the GPU would fail there for a reason that has nothing to do with it."""
    from cudasmith.device import usable_device

    if device is None and usable_device() == "cpu":
        raise UsageError("no CUDA GPU is visible here; add --device cpu to judge on the CPU (C kernels)")
    return usable_device(device)


def time_limits(
    call_s: float | None, load_s: float | None, first_call_extra_s: float | None = None
) -> dict[str, float]:
    """The EvalOptions fields set by --time-limit, --load-time-limit and --first-call-extra (the harness's
    defaults otherwise)."""
    limits = {"call_timeout_s": call_s, "load_timeout_s": load_s, "first_call_extra_s": first_call_extra_s}
    for flag, value in (("--time-limit", call_s), ("--load-time-limit", load_s)):
        if value is not None and not value > 0:
            raise UsageError(f"{flag} must be a positive number of seconds, not {value:g}")
    if first_call_extra_s is not None and first_call_extra_s < 0:
        raise UsageError(f"--first-call-extra must not be negative, not {first_call_extra_s:g}")
    return {field: value for field, value in limits.items() if value is not None}


def pick_problem(
    named: str | None, task: str | None, problem: Path | None, problem_dir: Path | None
) -> Problem:
    """The problem of a command that takes TASK (a name or a file), --task NAME or --problem FILE."""
    from cudasmith.tasks.lookup import find_named, find_problem

    if named is not None and (task is not None or problem is not None):
        raise UsageError(f"give the task once: {named!r} or --task/--problem, not both")
    if named is not None:
        return find_named(named, problem_dir)
    return find_problem(task, problem, problem_dir)


# Options spelled the same way by every command that has them.
TaskArgument = Annotated[
    str | None,
    typer.Argument(
        metavar="TASK",
        help="Built-in task (e.g. level1/softmax), a problem file, or a name `tasks --from DIR` listed.",
        show_default=False,
    ),
]
TaskOption = Annotated[
    str | None,
    typer.Option(
        "--task",
        "-t",
        metavar="NAME",
        help="Built-in task (e.g. level1/softmax), or a problem of --from DIR.",
    ),
]
ProblemOption = Annotated[
    Path | None,
    typer.Option("--problem", "-p", metavar="FILE", help="Problem file (KernelBench's format works)."),
]
FromOption = Annotated[
    Path | None,
    typer.Option(
        "--from",
        "--problem-dir",
        metavar="DIR",
        help="A KernelBench checkout or folder of problem files: task names are those `tasks --from DIR` lists.",
        show_default=False,
    ),
]
DeviceOption = Annotated[
    str | None,
    typer.Option(
        "--device",
        "-d",
        metavar="DEVICE",
        help="cuda, cuda:N or cpu \\[default: cuda when a GPU is visible, else cpu]",
    ),
]
JudgeDeviceOption = Annotated[
    str | None,
    typer.Option(
        "--device",
        "-d",
        metavar="DEVICE",
        help="cuda, cuda:N or cpu \\[default: cuda; without a GPU, say --device cpu]",
    ),
]
# The harness's defaults (cudasmith.harness.options: CALL_FACTOR, CALL_FLOOR_S, LOAD_TIMEOUT_S and
# FIRST_CALL_EXTRA_S; tests keep these in step). Spelled out here: --help must not import torch.
TimeLimitOption = Annotated[
    float | None,
    typer.Option(
        "--time-limit",
        metavar="SECONDS",
        help="Longest one call of forward may take; slower is a timeout verdict "
        "\\[default: 100x the reference's own time, at least 5]",
        show_default=False,
    ),
]
LoadTimeLimitOption = Annotated[
    float | None,
    typer.Option(
        "--load-time-limit",
        metavar="SECONDS",
        help="Longest the solution's import and kernel compilation may take \\[default: 120]",
        show_default=False,
    ),
]
RulesOption = Annotated[
    str,
    typer.Option(
        "--rules",
        metavar="RULES",
        help="strict: the solution's own kernels do the work; kernelbench: PyTorch compute allowed everywhere, "
        "as KernelBench allows it (verdicts still name the operators and the solution's own share)",
    ),
]
RequireIsolationOption = Annotated[
    bool,
    typer.Option(
        "--require-isolation",
        help="Refuse to judge where candidates' files cannot be isolated (no Landlock, no namespaces).",
    ),
]
FirstCallExtraOption = Annotated[
    float | None,
    typer.Option(
        "--first-call-extra",
        metavar="SECONDS",
        help="Added to the first call's limit, for JIT compilation and autotuning \\[default: 10]",
        show_default=False,
    ),
]

# cudasmith.harness.memory.MEMORY_LIMIT_OPTION names this option in the judge's messages.
MemoryLimitOption = Annotated[
    float | None,
    typer.Option(
        "--memory-limit",
        metavar="GIB",
        help="Host memory each worker (and what it starts) may use, in GiB \\[default: half the machine's]",
        show_default=False,
    ),
]


def memory_limit(gib: float | None) -> dict[str, int]:
    """The EvalOptions field set by --memory-limit (the harness's default otherwise)."""
    if gib is None:
        return {}
    if not gib > 0:
        raise UsageError(f"--memory-limit must be a positive number of GiB, not {gib:g}")
    return {"memory_limit_bytes": int(gib * 2**30)}


def version_callback(value: bool) -> None:
    """`cudasmith --version`: print the version and stop."""
    if value:
        from cudasmith import __version__

        typer.echo(f"cudasmith {__version__}")
        raise typer.Exit()


VersionOption = Annotated[
    bool,
    typer.Option("--version", callback=version_callback, is_eager=True, help="Print the version and exit."),
]
ExecutorOption = Annotated[
    str,
    typer.Option(
        "--executor",
        help="Where candidates are judged: local (a judge session on each GPU here) or ray (sessions as "
        "Ray actors, on --address or a Ray instance started for the run; pip install 'cudasmith\\[ray]').",
    ),
]
GpusOption = Annotated[
    str | None,
    typer.Option(
        "--gpus",
        help="With --device cuda: the GPUs that judge, one session each: all, a count (2) or, locally, "
        "indices (0,3) \\[default: all]",
    ),
]
AddressOption = Annotated[
    str | None,
    typer.Option("--address", help="A running Ray cluster's address (host:port or ray://host:port)."),
]
BuildWorkersOption = Annotated[
    int | None,
    typer.Option(
        "--build-workers",
        help="Candidates compiled ahead at once on CPUs (0: none) \\[default: the cores the lanes leave]",
    ),
]
