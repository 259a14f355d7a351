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

from cudasmith.commands.bundle import bundled
from cudasmith.commands.common import pick_problem

if TYPE_CHECKING:
    from cudasmith.exec import Lanes
    from cudasmith.tasks.problem import Problem

# The help panels that group options beyond a command's own.
JUDGING = "Judging"
LANES = "Lanes (where candidates are judged)"
MODELS = "Models"

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
    typer.Option(
        "--from",
        "--problem-dir",
        metavar="DIR",
        help="A KernelBench checkout or folder of problem files: task names are those `tasks --from DIR` lists.",
        show_default=False,
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
    typer.Option(
        "--store",
        metavar="FILE",
        help="The run store; run folders go beside it \\[default: $CUDASMITH_STORE, else runs/cudasmith.db]",
        show_default=False,
    ),
]
ResumeOption = Annotated[
    str | None,
    typer.Option(
        "--resume",
        metavar="RUN",
        help="Go on with a stopped or crashed run of the store (its id), with its own options and device.",
        show_default=False,
    ),
]
OutputOption = Annotated[
    Path | None, typer.Option("--output", "-o", metavar="FILE", help="Write it here.", show_default=False)
]
ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        metavar="FILE",
        help="Settings file \\[default: $CUDASMITH_CONFIG, else ./cudasmith.toml]",
        show_default=False,
    ),
]
TemplatesOption = Annotated[
    Path | None,
    typer.Option(
        "--templates",
        metavar="DIR",
        help="Directory of prompt templates replacing the built-in ones of the same name.",
        show_default=False,
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
    typer.Option(
        "--n",
        "-n",
        metavar="COUNT",
        help="Candidates per round: answers asked for at once \\[default: ask 1, optimize 4, bench 1]",
        rich_help_panel=MODELS,
        show_default=False,
    ),
]
DepthOption = Annotated[
    int | None,
    typer.Option(
        "--depth",
        metavar="ROUNDS",
        help="Rounds of fsr or evolve \\[default: the \\[optimize] settings, else 5]",
        rich_help_panel=MODELS,
        show_default=False,
    ),
]
StrategyOption = Annotated[
    str | None,
    typer.Option(
        "--strategy",
        metavar="NAME",
        help="one-shot (one request), fsr (rounds seeded by the best) or evolve (islands) "
        "\\[default: optimize fsr, bench one-shot]",
        rich_help_panel=MODELS,
        show_default=False,
    ),
]
BudgetOption = Annotated[
    float | None,
    typer.Option(
        "--budget",
        metavar="USD",
        help="Make no new model call once this many US dollars are spent.",
        rich_help_panel=MODELS,
        show_default=False,
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
    typer.Option(
        "--gpus",
        metavar="GPUS",
        help="With --device cuda: the GPUs that judge, one session each: all, a count (2) or, locally, "
        "indices (0,3) \\[default: all]",
        rich_help_panel=LANES,
        show_default=False,
    ),
]
AddressOption = Annotated[
    str | None,
    typer.Option(
        "--address",
        metavar="HOST:PORT",
        help="A running Ray cluster's address (host:port or ray://host:port).",
        rich_help_panel=LANES,
        show_default=False,
    ),
]
BuildWorkersOption = Annotated[
    int | None,
    typer.Option(
        "--build-workers",
        metavar="COUNT",
        help="Candidates compiled ahead at once on CPUs (0: none) \\[default: the cores the lanes leave]",
        rich_help_panel=LANES,
        show_default=False,
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

    def load(self) -> Problem:
        """The problem they name, loaded."""
        return pick_problem(self.named, self.task, self.problem, self.from_dir)


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
