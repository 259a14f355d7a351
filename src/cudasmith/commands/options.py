"""The options of `cudasmith`, each defined once: every command that has one spells it, abbreviates it
and explains it the same way. Judging options are bundled in cudasmith.commands.judging, the lanes'
in `LaneFlags`, the task's in `TaskFlags`.

Every option that takes a value names it (METAVAR), so help never shows Typer's `<str>` or `<path>`.
Defaults that live in the library are spelled out here, since `--help` must not import torch; the
tests keep them in step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cudasmith.commands.bundle import bundled, given
from cudasmith.commands.common import pick_problem, pick_problem_file
from cudasmith.errors import UsageError

if TYPE_CHECKING:
    from cudasmith.exec import Lanes
    from cudasmith.tasks.problem import Problem

# The help panels that group options beyond a command's own.
JUDGING = "Judging"
LANES = "Lanes (where candidates are judged)"
MODELS = "Models"


def value_option(*names: str, metavar: str, help: str, panel: str | None = None) -> Any:
    """An option that takes a value, in `panel` of the help; its help spells out its default where it has
    one, since Typer's own would show the None that stands for "not given"."""
    return typer.Option(*names, metavar=metavar, help=help, rich_help_panel=panel, show_default=False)


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
TasksOption = Annotated[
    list[str] | None,
    typer.Option(
        "--task",
        "-t",
        metavar="NAME",
        help="Built-in task (e.g. level1/softmax), or a problem of --from DIR; repeatable.",
    ),
]
ProblemOption = Annotated[
    Path | None,
    typer.Option("--problem", "-p", metavar="FILE", help="Problem file (KernelBench's format works)."),
]
FromOption = Annotated[
    Path | None,
    value_option(
        "--from",
        "--problem-dir",
        metavar="DIR",
        help="A KernelBench checkout or folder of problem files: task names are those `tasks --from DIR` lists.",
    ),
]


LevelOption = Annotated[
    str | None, typer.Option("--level", metavar="LEVEL", help="The tasks of a level, e.g. level1 or apps.")
]
DeviceOption = Annotated[
    str | None,
    typer.Option(
        "--device",
        "-d",
        metavar="DEVICE",
        help="cuda, cuda:N or cpu \\[default: cuda; without a GPU, name --device cpu]",
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print JSON on stdout (one object; one per line for several).")
]
StoreOption = Annotated[
    Path | None,
    value_option(
        "--store",
        metavar="FILE",
        help="The run store; run folders go beside it \\[default: $CUDASMITH_STORE, else runs/cudasmith.db]",
    ),
]
ResumeOption = Annotated[
    str | None,
    value_option(
        "--resume",
        metavar="RUN",
        help="Go on with a stopped or crashed run of the store (its id), with its own options and device.",
    ),
]
ServerOption = Annotated[
    str | None,
    value_option(
        "--server",
        metavar="URL",
        help="Have a running `cudasmith serve` judge them (its token in $CUDASMITH_TOKEN), under the judging "
        "flags given; --device, --seed, --memory-limit, --require-isolation, --in-flight and the lane flags are "
        "its own.",
    ),
]
OutputOption = Annotated[Path | None, value_option("--output", "-o", metavar="FILE", help="Write it here.")]
ConfigOption = Annotated[
    Path | None,
    value_option(
        "--config",
        metavar="FILE",
        help="Settings file \\[default: $CUDASMITH_CONFIG, else ./cudasmith.toml]",
    ),
]
TemplatesOption = Annotated[
    Path | None,
    value_option(
        "--templates",
        metavar="DIR",
        help="Directory of prompt templates replacing the built-in ones of the same name.",
    ),
]
ParentOption = Annotated[
    Path | None,
    typer.Option(
        "--parent", metavar="FILE", help="A solution to improve (with --verdict): the refinement prompt."
    ),
]
VerdictOption = Annotated[
    Path | None,
    typer.Option(
        "--verdict", metavar="FILE", help="The parent's verdict: what `cudasmith eval --json` printed for it."
    ),
]

# The models and the search.
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        metavar="MODEL",
        help="openai:NAME, anthropic:NAME, hf:NAME, replay:PATH or ENDPOINT:NAME "
        "\\[default: llm.model of the config, else a local hf: model]",
        rich_help_panel=MODELS,
    ),
]
ModelsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--model",
        "-m",
        metavar="MODEL",
        help="openai:NAME, anthropic:NAME, hf:NAME, replay:PATH or ENDPOINT:NAME; repeat for an ensemble "
        "\\[default: llm.model of the config]",
        rich_help_panel=MODELS,
    ),
]
CountOption = Annotated[
    int | None,
    value_option(
        "--n",
        "-n",
        metavar="COUNT",
        help="Candidates per round: answers asked for at once \\[default: ask 1, optimize 4, bench 1]",
        panel=MODELS,
    ),
]
DepthOption = Annotated[
    int | None,
    value_option(
        "--depth",
        metavar="ROUNDS",
        help="Rounds of fsr or evolve \\[default: the \\[optimize] settings, else 5]",
        panel=MODELS,
    ),
]
StrategyOption = Annotated[
    str | None,
    value_option(
        "--strategy",
        metavar="NAME",
        help="one-shot (one request), fsr (rounds seeded by the best) or evolve (islands) "
        "\\[default: optimize fsr, bench one-shot]",
        panel=MODELS,
    ),
]
BudgetOption = Annotated[
    float | None,
    value_option(
        "--budget",
        metavar="USD",
        help="Make no new model call once this many US dollars are spent.",
        panel=MODELS,
    ),
]

# Where candidates are judged: optimize and bench.
ExecutorOption = Annotated[
    str,
    typer.Option(
        "--executor",
        metavar="KIND",
        help="local (a judge session on each GPU here) or ray (sessions as Ray actors, on --address or a "
        "Ray instance started for the run; pip install 'cudasmith\\[ray]').",
        rich_help_panel=LANES,
    ),
]
GpusOption = Annotated[
    str | None,
    value_option(
        "--gpus",
        metavar="GPUS",
        help="With --device cuda: the GPUs that judge, one session each: all, a count (2) or, locally, "
        "indices (0,3) \\[default: all]",
        panel=LANES,
    ),
]
AddressOption = Annotated[
    str | None,
    value_option(
        "--address",
        metavar="HOST:PORT",
        help="A running Ray cluster's address (host:port or ray://host:port).",
        panel=LANES,
    ),
]
BuildWorkersOption = Annotated[
    int | None,
    value_option(
        "--build-workers",
        metavar="COUNT",
        help="Candidates compiled ahead at once on CPUs (0: none) \\[default: the cores the lanes leave]",
        panel=LANES,
    ),
]


@dataclass(frozen=True)
class TaskFlags:
    """What the task flags of a command said: TASK, --task, --problem and --from."""

    named: TaskArgument = None
    task: TaskOption = None
    problem: ProblemOption = None
    from_dir: FromOption = None

    def given(self) -> bool:
        """Whether they name a task (--from alone names none)."""
        return bool(self.named or self.task or self.problem)

    def check(self) -> None:
        """That they name one problem that is there, found without importing torch (a usage error, a
        misspelt task's did-you-mean included, comes at once)."""
        pick_problem_file(self.named, self.task, self.problem, self.from_dir)

    def load(self) -> Problem:
        """The problem they name, loaded."""
        return pick_problem(self.named, self.task, self.problem, self.from_dir)


def at_least_one(**counts: int | None) -> None:
    """A UsageError naming the flag of the first count given below 1: `at_least_one(n=n, depth=depth)`
    checks -n and --depth."""
    for name, value in counts.items():
        if value is not None and value < 1:
            flag = f"-{name}" if len(name) == 1 else f"--{name}"
            raise UsageError(f"{flag} must be at least 1, not {value}")


def for_a_task(command: Callable[..., Any]) -> Callable[..., Any]:
    """The command, taking the task flags in place of its `task_flags: TaskFlags` parameter."""
    return bundled(command, "task_flags", TaskFlags)


@dataclass(frozen=True)
class LaneFlags:
    """What the lane flags of a command said."""

    executor: ExecutorOption = "local"
    gpus: GpusOption = None
    address: AddressOption = None
    build_workers: BuildWorkersOption = None

    def given(self) -> list[str]:
        """The flags the command line set, as typed (`--gpus`)."""
        return given(self)

    def lanes(self) -> Lanes:
        """The lanes they choose (checked when a run starts)."""
        from cudasmith.exec import Lanes

        return Lanes(self.executor, self.gpus, self.address, self.build_workers)


def in_lanes(command: Callable[..., Any]) -> Callable[..., Any]:
    """The command, taking the lane flags in place of its `lane_flags: LaneFlags` parameter."""
    return bundled(command, "lane_flags", LaneFlags)


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
