"""The `cudasmith` command: a thin layer over the library (heavy imports happen inside commands)."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from cudasmith.cli_cache import cache_command
from cudasmith.cli_common import (
    EXIT_CORRECT,
    EXIT_USAGE,
    EXIT_VERDICT,
    CudasmithGroup,
    DeviceOption,
    FirstCallExtraOption,
    FromOption,
    InFlightOption,
    JudgeDeviceOption,
    LoadTimeLimitOption,
    MemoryLimitOption,
    ProblemOption,
    RequireIsolationOption,
    RulesOption,
    TaskArgument,
    TaskOption,
    TimeLimitOption,
    VersionOption,
    fail,
    judging_device,
    memory_limit,
    one_line_errors,
    pick_problem,
    stderr,
    time_limits,
)
from cudasmith.commands.bench import bench_command
from cudasmith.commands.device import device_command
from cudasmith.commands.export import export_command
from cudasmith.commands.optimize import optimize_command
from cudasmith.commands.report import report_command
from cudasmith.errors import UsageError

app = typer.Typer(
    name="cudasmith",
    help="Turn a PyTorch reference into a faster, verified GPU kernel, and judge kernels honestly.",
    cls=CudasmithGroup,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
# Kept importable from here for command modules written against the old cli.py (new ones: cli_common).
__all__ = ["EXIT_CORRECT", "EXIT_USAGE", "EXIT_VERDICT", "app", "fail", "main", "one_line_errors", "stderr"]


def guarded(command: Callable[..., None]) -> Callable[..., None]:
    """A command whose body lives in cudasmith.commands, with one-line errors around it."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> None:
        with one_line_errors():
            command(*args, **kwargs)

    return run


@app.callback()
def root(version: VersionOption = False) -> None:
    """Turn a PyTorch reference into a faster, verified GPU kernel, and judge kernels honestly."""


def _solution_files(paths: list[Path]) -> list[Path]:
    """The solution files named: files as given, folders as their *.py files in name order."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            inside = sorted(p for p in path.glob("*.py") if p.is_file())
            if not inside:
                raise UsageError(f"{path} is a folder with no solution files (*.py) in it")
            found += inside
        elif path.is_file():
            found.append(path)
        else:
            raise UsageError(f"solution file not found: {path}")
    return found


@app.command("eval")
def eval_command(
    solutions: Annotated[
        list[Path],
        typer.Argument(
            metavar="SOLUTION...",
            help="Solution files defining ModelNew, or folders of them.",
            show_default=False,
        ),
    ],
    task: TaskOption = None,
    problem: ProblemOption = None,
    from_dir: FromOption = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Print one JSON object on stdout (JSON Lines, one per solution, for several)."
        ),
    ] = False,
    device: JudgeDeviceOption = None,
    seed: Annotated[
        int | None,
        typer.Option(
            help="The secret seed (every verdict records the one it used): the same input sets again."
        ),
    ] = None,
    seeds: Annotated[int, typer.Option(help="Input sets checked per config.")] = 3,
    timing: Annotated[bool, typer.Option("--timing/--no-timing", help="Time correct candidates.")] = True,
    time_limit: TimeLimitOption = None,
    load_time_limit: LoadTimeLimitOption = None,
    samples: Annotated[bool, typer.Option(help="Include raw timing samples in --json output.")] = False,
    l2: Annotated[
        str | None,
        typer.Option(
            "--l2",
            metavar="STATE",
            help="L2 while timing: cold (flushed before each call) or hot \\[default: the problem's, cold]",
        ),
    ] = None,
    graph: Annotated[
        bool, typer.Option("--graph", help="Time CUDA-graph replays of each call (for launch-bound kernels).")
    ] = False,
    baselines: Annotated[
        str | None,
        typer.Option(
            metavar="NAMES",
            help="Baselines timed beside eager PyTorch: compile, compile-max-autotune, expert, comma-separated "
            "\\[default: compile and expert on a GPU, expert on the CPU]",
        ),
    ] = None,
    first_call_extra: FirstCallExtraOption = None,
    memory_limit_gib: MemoryLimitOption = None,
    rules: RulesOption = "strict",
    require_isolation: RequireIsolationOption = False,
    in_flight: InFlightOption = None,
) -> None:
    """Judge SOLUTIONS against a task: correct on every config and input set, and how fast.

    Several solutions (or folders of them) are judged in one session: the reference outputs, the baselines
    and warm workers are shared, so each costs seconds; each still runs in a fresh, isolated process.

    Exit code 0 when every verdict is correct, 1 for any other verdict, 2 for bad usage.

    Example: [bold]cudasmith eval examples/softmax_cpu.py --task level1/softmax --device cpu[/]
    """
    from cudasmith.exec.ahead import judge_built_ahead
    from cudasmith.harness.baselines import parse_baselines
    from cudasmith.harness.options import EvalOptions
    from cudasmith.harness.session import Judge, resolve_problem
    from cudasmith.report.verdict_table import print_summary, print_verdict, progress_bar

    verdicts = []
    with one_line_errors():
        loaded = resolve_problem(task, problem, from_dir)
        files = _solution_files(solutions)
        if seeds < 1:
            raise UsageError("--seeds must be at least 1")
        options = EvalOptions(
            device=judging_device(device),
            seed=seed,
            seeds_per_config=seeds,
            timing=timing,
            baselines=parse_baselines(baselines) if baselines else None,
            l2_state=l2,
            graph=graph,
            rules=rules,
            require_isolation=require_isolation,
            in_flight=in_flight,
            **time_limits(time_limit, load_time_limit, first_call_extra),
            **memory_limit(memory_limit_gib),
        )
        with (
            progress_bar(enabled=not as_json and stderr.is_terminal) as progress,
            Judge(loaded, options, progress, candidates=len(files)) as judge,
        ):
            for verdict in judge_built_ahead(judge, files):
                verdicts.append(verdict)
                if as_json:
                    indent = 2 if len(files) == 1 else None
                    sys.stdout.write(json.dumps(verdict.to_dict(samples=samples), indent=indent) + "\n")
                    sys.stdout.flush()
                else:
                    print_verdict(verdict)
    if not as_json and len(verdicts) > 1:
        print_summary(verdicts)
    raise typer.Exit(EXIT_CORRECT if verdicts and all(v.correct for v in verdicts) else EXIT_VERDICT)


def _unloaded(listing: Any) -> list[dict[str, str]]:
    return [
        {"status": status, "name": entry.name, "path": str(entry.path), "reason": entry.reason}
        for status, entries in (("skipped", listing.skipped), ("failed", listing.failed))
        for entry in entries
    ]


@app.command("tasks")
def tasks_command(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object: counts per level and the tasks.")
    ] = False,
    level: Annotated[
        str | None, typer.Option(metavar="LEVEL", help="Only this level, e.g. level1 or apps.")
    ] = None,
    from_dir: Annotated[
        Path | None,
        typer.Option(
            "--from",
            "--problem-dir",
            metavar="DIR",
            help="List the problems of a directory instead: a KernelBench checkout or a folder of problem files.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """List tasks: name, dtype, public and hidden configs, baselines, and what each computes.

    Example: [bold]cudasmith tasks --level apps[/] · [bold]cudasmith tasks --from KernelBench --level level1[/]
    """
    from cudasmith.tasks.catalog import in_level, level_counts, level_of, task_row
    from cudasmith.tasks.problem import list_task_names, load_task

    unloaded: list[dict[str, str]] = []
    with one_line_errors():
        if from_dir is None:
            problems = [load_task(name) for name in list_task_names()]
        else:
            from cudasmith.tasks.directory import load_problem_dir

            listing = load_problem_dir(from_dir)
            problems, unloaded = listing.problems, _unloaded(listing)
        if level is not None:
            names = [p.name for p in problems] + [u["name"] for u in unloaded]
            if not any(in_level(name, level) for name in names):
                known = ", ".join(sorted({level_of(name) for name in names}))
                raise UsageError(f"unknown level {level!r}; the levels here are {known}")
            problems = [p for p in problems if in_level(p.name, level)]
            unloaded = [u for u in unloaded if in_level(u["name"], level)]
    rows, counts = [task_row(p) for p in problems], level_counts(problems)
    if as_json:
        listing_json = {"counts": counts, "total": len(rows), "tasks": rows}
        if from_dir is not None:
            listing_json["unloaded"] = unloaded
        sys.stdout.write(json.dumps(listing_json, indent=2) + "\n")
        return
    from cudasmith.report.task_tables import print_task_list

    print_task_list(rows, counts, unloaded)


@app.command("show")
def show_command(
    named: TaskArgument = None,
    task: TaskOption = None,
    problem: ProblemOption = None,
    from_dir: FromOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    source: Annotated[bool, typer.Option("--source/--no-source", help="Print the reference source.")] = True,
    device: Annotated[
        str | None,
        typer.Option(
            "--device",
            "-d",
            metavar="DEVICE",
            help="Whose measured peaks give the roofline \\[default: cuda when visible, else cpu]",
        ),
    ] = None,
) -> None:
    """Show a task: its reference, tolerance, baselines, sizes, work and roofline per config.

    Per config: sizes of inputs, weights and outputs, FLOPs, bytes moved, arithmetic intensity, and the
    speed of light and floor at the device's measured peaks.

    Example: [bold]cudasmith show level3/gpt_forward --no-source[/]
    """
    from cudasmith.device import load_peaks
    from cudasmith.harness.task_details import task_details

    with one_line_errors():
        loaded = pick_problem(named, task, problem, from_dir)
        details = task_details(loaded, load_peaks(device))
    if as_json:
        sys.stdout.write(json.dumps(details, indent=2) + "\n")
        return
    from cudasmith.report.task_tables import print_task_details

    print_task_details(details, source=source)


def _parent(parent: Path | None, verdict: Path | None) -> Any:
    """The solution to improve, with the verdict on it (both or neither)."""
    from cudasmith.search.feedback import verdict_from_dict
    from cudasmith.search.prompts import Parent

    if parent is None and verdict is None:
        return None
    if parent is None or verdict is None:
        raise UsageError(
            "--parent and --verdict go together: a solution and its `cudasmith eval --json` output"
        )
    for path in (parent, verdict):
        if not path.is_file():
            raise UsageError(f"file not found: {path}")
    try:
        data = json.loads(verdict.read_text())
    except json.JSONDecodeError as exc:
        raise UsageError(f"{verdict}: not JSON ({exc.msg})") from None
    return Parent(parent.read_text(), verdict_from_dict(data))


ParentOption = Annotated[
    Path | None,
    typer.Option(metavar="FILE", help="A solution to improve (with --verdict): the refinement prompt."),
]
VerdictOption = Annotated[
    Path | None,
    typer.Option(metavar="FILE", help="The parent's verdict: what `cudasmith eval --json` printed for it."),
]
TemplatesOption = Annotated[
    Path | None,
    typer.Option(
        metavar="DIR", help="Directory of prompt templates replacing the built-in ones of the same name."
    ),
]
ConfigOption = Annotated[
    Path | None,
    typer.Option(metavar="FILE", help="Settings file \\[default: $CUDASMITH_CONFIG, else ./cudasmith.toml]"),
]


@app.command("prompt")
def prompt_command(
    named: TaskArgument = None,
    task: TaskOption = None,
    problem: ProblemOption = None,
    from_dir: FromOption = None,
    device: DeviceOption = None,
    parent: ParentOption = None,
    verdict: VerdictOption = None,
    templates: TemplatesOption = None,
    config: ConfigOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the messages as JSON.")] = False,
) -> None:
    """Print the prompt that would be sent for TASK: task, hardware, rules, solution contract.

    Example: [bold]cudasmith prompt level1/softmax --device cpu[/]
    """
    with one_line_errors():
        from cudasmith.device import default_device, known_device
        from cudasmith.search.prompts import PromptBuilder, templates_from_config

        loaded = pick_problem(named, task, problem, from_dir)
        builder = PromptBuilder(templates or templates_from_config(config))
        # A prompt for a GPU can be written on a machine without one: the device is not checked here.
        target = known_device(device) if device else default_device()
        prompt = builder.build(loaded, target, parent=_parent(parent, verdict))
    if as_json:
        sys.stdout.write(json.dumps(prompt.to_dict(), indent=2) + "\n")
    else:
        sys.stdout.write(f"─── system ───\n{prompt.system}\n\n─── user ───\n{prompt.user}")


@app.command("ask")
def ask_command(
    named: TaskArgument = None,
    task: TaskOption = None,
    problem: ProblemOption = None,
    from_dir: FromOption = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            metavar="MODEL",
            help="openai:NAME, anthropic:NAME, hf:NAME, replay:PATH or ENDPOINT:NAME "
            "\\[default: llm.model of the config, else a local hf: model]",
        ),
    ] = None,
    n: Annotated[int, typer.Option("-n", "--n", help="Answers to ask for; each is judged.")] = 1,
    device: JudgeDeviceOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")] = False,
    timing: Annotated[bool, typer.Option("--timing/--no-timing", help="Time correct candidates.")] = True,
    seeds: Annotated[int, typer.Option(help="Input sets checked per config.")] = 3,
    seed: Annotated[int | None, typer.Option(help="Fix the judge's secret seed.")] = None,
    time_limit: TimeLimitOption = None,
    load_time_limit: LoadTimeLimitOption = None,
    memory_limit_gib: MemoryLimitOption = None,
    budget: Annotated[
        float | None, typer.Option(metavar="USD", help="Stop spending after this many US dollars.")
    ] = None,
    runs_dir: Annotated[Path, typer.Option(metavar="DIR", help="Where the run directory is made.")] = Path(
        "runs"
    ),
    parent: ParentOption = None,
    verdict: VerdictOption = None,
    templates: TemplatesOption = None,
    config: ConfigOption = None,
) -> None:
    """Ask a model for solutions of TASK once, judge every answer, and print the verdicts.

    Everything is kept in a run directory (runs/ask-…): the prompt, each answer, each candidate file
    and verdict. Exit code 0 when a candidate is correct, 1 when none is, 2 for bad usage or when the
    model gave no answer. Keys come from the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY, …).

    Example: [bold]cudasmith ask level1/softmax --model openai:gpt-5-mini -n 4 --device cpu[/]
    """
    with one_line_errors():
        from cudasmith.harness.options import EvalOptions
        from cudasmith.llm.config import load_llm_config
        from cudasmith.report.verdict_table import progress_bar
        from cudasmith.search.ask import ask
        from cudasmith.search.prompts import templates_from_config

        loaded = pick_problem(named, task, problem, from_dir)
        if seeds < 1:
            raise UsageError("--seeds must be at least 1")
        settings = load_llm_config(config, budget_usd=budget)
        limits = {**time_limits(time_limit, load_time_limit), **memory_limit(memory_limit_gib)}
        options = EvalOptions(seed=seed, seeds_per_config=seeds, timing=timing, **limits)
        with progress_bar(enabled=not as_json and stderr.is_terminal) as progress:
            result = ask(
                loaded,
                model,
                n,
                judging_device(device),
                settings,
                options,
                runs_dir,
                templates or templates_from_config(config),
                _parent(parent, verdict),
                progress=progress,
            )
    if as_json:
        sys.stdout.write(json.dumps(result.to_dict(), indent=2) + "\n")
    else:
        from cudasmith.report.ask_table import print_ask

        print_ask(result)
    raise typer.Exit(EXIT_CORRECT if result.best is not None else EXIT_VERDICT)


app.command("optimize")(optimize_command)


app.command("device")(device_command)
app.command("bench")(guarded(bench_command))
app.command("report")(guarded(report_command))
app.command("export")(guarded(export_command))
app.command("cache")(cache_command)


def main() -> None:
    """Entry point of the `cudasmith` script."""
    app()
