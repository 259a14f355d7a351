"""`cudasmith bench`: a folder of solutions, or a model, over a set of tasks, into the run store."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from cudasmith.cli_common import (
    AddressOption,
    BuildWorkersOption,
    ExecutorOption,
    GpusOption,
    InFlightOption,
    MemoryLimitOption,
    RequireIsolationOption,
    RulesOption,
    memory_limit,
)
from cudasmith.commands.options import StoreOption

if TYPE_CHECKING:
    from cudasmith.bench.folder import BenchResult, OnVerdict
    from cudasmith.bench.model import ModelBench
    from cudasmith.exec import Lanes
    from cudasmith.harness.options import EvalOptions, Progress
    from cudasmith.store import CandidateRecord, RunStore

stderr = Console(stderr=True)
# A verdict's reason is cut to this many characters in the line printed as it arrives.
REASON_CHARS = 160


def _verdict_line(candidate: CandidateRecord, cached: bool) -> str:
    from rich.markup import escape

    from cudasmith.report.verdict_table import status_markup
    from cudasmith.store.metrics import speedup_of
    from cudasmith.store.rules import rule_broken

    verdict = candidate.verdict or {}
    status = str(verdict.get("status"))
    speedup = speedup_of(verdict)
    if speedup is not None:
        detail = f"{speedup:.3g}× eager PyTorch on {verdict.get('device')}"
    else:
        rule = rule_broken(verdict)
        reason = str(verdict.get("reason", ""))[:REASON_CHARS]
        detail = f"{rule}: {reason}" if rule else reason
    where = f"{candidate.meta.get('task')} {Path(candidate.path or candidate.key).name}"
    from_cache = " [dim](cached verdict)[/]" if cached else ""
    return f"{status_markup(status, width=13)} {escape(where)}: {escape(detail)}{from_cache}"


@contextmanager
def _progress(enabled: bool) -> Iterator[tuple[Progress | None, OnVerdict]]:
    """The progress bar over kernels (when there is a terminal) and a line printed per verdict."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.progress import Progress as Bar

    bar = Bar(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=stderr,
        transient=True,
        disable=not enabled,
    )
    eta = _Eta()
    with bar:
        task_id = bar.add_task("starting", total=None)

        def update(what: str, done: int, total: int) -> None:
            eta.update(done, total)
            bar.update(task_id, description=f"judging {what}", completed=done, total=total)

        def line(candidate: CandidateRecord, cached: bool) -> None:
            progress = "" if enabled else f" [dim]({eta.text()})[/]"
            bar.console.print(_verdict_line(candidate, cached) + progress, highlight=False)
            bar.advance(task_id)

        yield update, line


class _Eta:
    """Kernels done and left, and the time left at the pace of the kernels judged so far (verdicts
    taken from the cache come at once and do not set the pace)."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.first_done: int | None = None
        self.done = self.total = 0

    def update(self, done: int, total: int) -> None:
        if self.first_done is None:
            self.first_done, self.started = done, time.monotonic()
        self.done, self.total = done, total

    def text(self) -> str:
        left = max(0, self.total - self.done)
        judged = self.done - (self.first_done or 0)
        if judged <= 0 or not left:
            return f"{self.done} of {self.total} done, {left} left"
        remaining = (time.monotonic() - self.started) / judged * left
        return f"{self.done} of {self.total} done, {left} left, about {remaining:.0f} s to go"


def _bench_model(
    store: RunStore,
    spec: ModelBench,
    options: EvalOptions,
    level: str | None,
    names: list[str],
    kernelbench: Path | None,
    config: Path | None,
    resume: str | None,
    lanes: Lanes,
) -> BenchResult:
    """A model over the chosen tasks, one search per task, a line as each task's search starts."""
    from cudasmith.bench.model import bench_model
    from cudasmith.bench.tasks import select_problems
    from cudasmith.llm import load_llm_config
    from cudasmith.search.config import load_optimize_config

    problems = None if resume is not None else select_problems(level, names, kernelbench)

    def on_task(name: str, index: int, total: int) -> None:
        stderr.print(f"[bold]task {index + 1} of {total}:[/] {name}", highlight=False)

    return bench_model(
        store,
        problems,
        spec,
        options,
        load_llm_config(config, budget_usd=spec.budget_usd),
        load_optimize_config(config),
        resume,
        on_task,
        lanes,
    )


def bench_command(
    folder: Annotated[
        Path | None,
        typer.Argument(
            help="Folder of solutions: TASK_NAME/*.py (e.g. level1/softmax/a.py), or KernelBench's "
            "level_L_problem_ID_sample_K_kernel.py with --from.",
            show_default=False,
        ),
    ] = None,
    kernelbench: Annotated[
        Path | None,
        typer.Option(
            "--from",
            help="KernelBench checkout: the problems a folder's kernels answer, or the tasks for --model.",
            show_default=False,
        ),
    ] = None,
    model: Annotated[
        list[str] | None,
        typer.Option("--model", "-m", help="Bench a model instead: PROVIDER:NAME (repeat for an ensemble)."),
    ] = None,
    strategy: Annotated[str, typer.Option(help="With --model: one-shot, fsr or evolve.")] = "one-shot",
    k: Annotated[
        int, typer.Option("-k", help="With --model: samples per task (fsr, evolve: candidates per round).")
    ] = 1,
    depth: Annotated[
        int | None,
        typer.Option(help="With --model, fsr or evolve: rounds \\[default: the \\[optimize] settings]"),
    ] = None,
    level: Annotated[
        str | None, typer.Option(help="With --model: the tasks of a level, e.g. level1.")
    ] = None,
    task: Annotated[
        list[str] | None,
        typer.Option("--task", "-t", help="With --model: a task (repeatable), or a problem file."),
    ] = None,
    budget: Annotated[
        float | None, typer.Option(help="With --model: no new model call past this many US$.")
    ] = None,
    config: Annotated[
        Path | None, typer.Option(help="Settings file \\[default: $CUDASMITH_CONFIG, else ./cudasmith.toml]")
    ] = None,
    device: Annotated[
        str | None,
        typer.Option("--device", "-d", help="cuda or cpu \\[default: cuda when a GPU is visible, else cpu]"),
    ] = None,
    seeds: Annotated[int, typer.Option(help="Input sets checked per config.")] = 3,
    timing: Annotated[bool, typer.Option("--timing/--no-timing", help="Time correct kernels.")] = True,
    require_isolation: RequireIsolationOption = False,
    baselines: Annotated[
        str | None,
        typer.Option(
            help="Baselines timed beside eager PyTorch: compile, compile-max-autotune, expert, comma-separated "
            "\\[default: all on a GPU, expert on the CPU]"
        ),
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="Fix the judge's secret seed (default: fresh per bench).")
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option(
            help="Go on with a stopped bench run (its folder or tasks and options).", show_default=False
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the run's numbers as one JSON object.")
    ] = False,
    store: StoreOption = None,
    executor: ExecutorOption = "local",
    gpus: GpusOption = None,
    address: AddressOption = None,
    build_workers: BuildWorkersOption = None,
    memory_limit_gib: MemoryLimitOption = None,
    rules: RulesOption = "strict",
    in_flight: InFlightOption = None,
) -> None:
    """Bench kernels over tasks: a folder of existing solutions, or a model (--model) over a level or
    named tasks. Prints correctness, fast_p against each baseline, speedups, pass@k, % of speed of
    light, verdicts per status, rejections per rule and, for a model, the cost.

    Re-judging a KernelBench run says how many of its "correct" kernels hold up (its eval_results.json
    is read when present) and which rule the others broke. Everything goes into the run store;
    `--resume RUN` goes on after a stop, and a kernel judged before (same code, task, device, judge
    and options) reuses its verdict. Every visible GPU judges (one session each; --gpus to choose),
    --executor ray spreads the sessions over a Ray cluster.

    Examples: [bold]cudasmith bench runs/my_run --from KernelBench[/] ·
    [bold]cudasmith bench --model openai:gpt-5-mini --level level1 -k 4[/]
    """
    from cudasmith.api import default_device
    from cudasmith.bench.folder import FOLDER_STRATEGY, bench_folder
    from cudasmith.bench.model import ModelBench
    from cudasmith.errors import UsageError
    from cudasmith.harness.baselines import parse_baselines
    from cudasmith.harness.options import RULES, EvalOptions
    from cudasmith.report.leaderboard import print_leaderboard, print_run_details
    from cudasmith.report.rejudge import print_rejudge, rejudged, summarize_rejudge
    from cudasmith.store import RunStore
    from cudasmith.store.runs import load_run

    if seeds < 1:
        raise UsageError("--seeds must be at least 1")
    if rules not in RULES:
        raise UsageError(f"--rules must be one of {', '.join(RULES)}, not {rules!r}")
    options = EvalOptions(
        device=device or default_device(),
        seed=seed,
        seeds_per_config=seeds,
        timing=timing,
        baselines=parse_baselines(baselines) if baselines else None,
        **memory_limit(memory_limit_gib),
        rules=rules,
        require_isolation=require_isolation,
        in_flight=in_flight,
    )
    options.check_isolation()
    from cudasmith.exec import Lanes

    lanes = Lanes(executor, gpus, address, build_workers)
    with RunStore(store) as opened:
        model_run = resume is not None and opened.run(resume).strategy != FOLDER_STRATEGY
        if model or model_run:
            if folder is not None:
                raise UsageError("give a folder of solutions or --model, not both")
            spec = ModelBench(tuple(model or ()), strategy, k, depth, budget)
            result = _bench_model(
                opened, spec, options, level, task or [], kernelbench, config, resume, lanes
            )
        else:
            if level is not None or task:
                raise UsageError(
                    "--level and --task choose tasks for --model; a folder's files name their tasks"
                )
            with _progress(enabled=stderr.is_terminal) as (progress, on_verdict):
                result = bench_folder(
                    opened, folder, kernelbench, options, resume, progress, on_verdict, lanes
                )
        view = load_run(opened, result.run_id)
        kernels = rejudged(opened.candidates(result.run_id)) if view.run.options.get("layout") else []
    rejudge = summarize_rejudge(kernels).to_dict() if kernels else None
    if as_json:
        numbers = {"run": result.run_id, **view.summary.to_dict(), "rejudge": rejudge}
        sys.stdout.write(json.dumps(numbers, indent=2) + "\n")
        return
    console = Console()
    print_leaderboard([view], console)
    print_run_details(view, console)
    print_rejudge(kernels, console)
    for path, why in result.unmatched:
        console.print(f"[dim]not judged: {path}: {why}[/]", highlight=False)
    console.print(
        f"{result.judged} verdicts given, {result.cached} reused from the store's cache ({opened.path}); "
        f"the report: [bold]cudasmith report {result.run_id} --html report.html[/]",
        highlight=False,
    )
