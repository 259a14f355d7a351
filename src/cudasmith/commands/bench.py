"""`cudasmith bench`: a folder of solutions, or a model, over a set of tasks, into the run store."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cudasmith.commands.common import stderr
from cudasmith.commands.judging import JudgeFlags, judging
from cudasmith.commands.options import (
    BudgetOption,
    ConfigOption,
    CountOption,
    DepthOption,
    FromOption,
    JsonOption,
    LaneFlags,
    LevelOption,
    ModelsOption,
    ResumeOption,
    ServerOption,
    StoreOption,
    StrategyOption,
    TasksOption,
    at_least_one,
    in_lanes,
)
from cudasmith.commands.remote import resumed_lanes, server_lanes
from cudasmith.commands.store import existing_store, store_to_write
from cudasmith.errors import UsageError

if TYPE_CHECKING:
    from cudasmith.bench.folder import BenchResult
    from cudasmith.bench.layout import SolutionFolder
    from cudasmith.search.config import SearchSettings
    from cudasmith.store import RunStore

# Why a model's bench is not judged by a server (a UsageError's clause).
MODEL_HERE = (
    "--server judges a folder's kernels, not a model's (--model): a search screens each correct kernel "
    "against its best so far before timing it in full, which a request to a server cannot ask"
)


def _bench_model(
    store: RunStore,
    models: tuple[str, ...],
    settings: SearchSettings,
    tasks: tuple[str | None, list[str], Path | None],
    resume: str | None,
) -> BenchResult:
    """A model over the chosen tasks (a level, names, a KernelBench checkout's), one search per task, a
    line as each task's search starts."""
    from cudasmith.bench.model import bench_model
    from cudasmith.bench.tasks import select_problems

    problems = None if resume is not None else select_problems(*tasks)

    def on_task(name: str, index: int, total: int) -> None:
        stderr.print(f"[bold]task {index + 1} of {total}:[/] {name}", highlight=False)

    return bench_model(store, problems, models, settings, resume, on_task)


def _solution_folder(folder: Path, kernelbench: Path | None, skip_unknown: bool) -> SolutionFolder:
    """The folder's submissions; a folder named after no task stops the bench before any judging,
    unless --skip-unknown (then it is listed as not judged)."""
    from cudasmith.bench.layout import discover, named_after_no_task

    found = discover(folder, kernelbench)
    unknown = named_after_no_task(found)
    if unknown is None or skip_unknown:
        return found
    raise UsageError(f"{unknown}; rename it, or add --skip-unknown to judge the rest")


def _check_cheaply(
    folder: Path | None,
    model: list[str] | None,
    level: str | None,
    task: list[str] | None,
    from_dir: Path | None,
    config: Path | None,
    n: int | None,
    depth: int | None,
    resume: str | None,
    judge: JudgeFlags | None,
) -> None:
    """What bench can check before torch is imported: the judging flags (None: a server's request, checked
    as it was made), the counts, the models and their keys, the built-in tasks named, that the folder is
    there."""
    from cudasmith.bench.tasks import check_tasks
    from cudasmith.llm import check_model, load_llm_config

    at_least_one(n=n, depth=depth)
    if resume is not None:
        return
    if judge is not None:
        judge.check()
    if folder is not None and not folder.is_dir():
        raise UsageError(f"solution folder not found: {folder}")
    if model:
        if from_dir is None:
            check_tasks(level, task or [])
        llm_config = load_llm_config(config)
        for spec in model:
            check_model(spec, llm_config)


@judging
@in_lanes
def bench_command(
    folder: Annotated[
        Path | None,
        typer.Argument(
            metavar="FOLDER",
            help="Folder of solutions: TASK_NAME/*.py (e.g. level1/softmax/a.py), or KernelBench's "
            "level_L_problem_ID_sample_K_kernel.py with --from.",
            show_default=False,
        ),
    ] = None,
    from_dir: FromOption = None,
    skip_unknown: Annotated[
        bool,
        typer.Option("--skip-unknown", help="Judge a folder's solutions even where a folder names no task."),
    ] = False,
    model: ModelsOption = None,
    strategy: StrategyOption = None,
    n: CountOption = None,
    depth: DepthOption = None,
    level: LevelOption = None,
    task: TasksOption = None,
    budget: BudgetOption = None,
    config: ConfigOption = None,
    resume: ResumeOption = None,
    as_json: JsonOption = False,
    store: StoreOption = None,
    server: ServerOption = None,
    *,
    lane_flags: LaneFlags,
    judge: JudgeFlags,
) -> None:
    """Bench kernels over tasks: a folder of existing solutions, or a model (--model) over a level or
    named tasks. Prints correctness, fast_p against each baseline, speedups, pass@k, % of speed of
    light, verdicts per status, rejections per rule and, for a model, the cost.

    Re-judging a KernelBench run (--from its checkout) says how many of its "correct" kernels hold up
    (its eval_results.json is read when present) and which rule the others broke. Everything goes into
    the run store; --resume RUN goes on after a stop, and a kernel judged before (same code, task,
    device, judge and options) reuses its verdict. Every visible GPU judges (one session each; --gpus
    to choose); --executor ray spreads the sessions over a Ray cluster; --server URL has a running `cudasmith
    serve` judge a folder's kernels (a model's bench judges here: its searches screen kernels as they go).

    Examples: [bold]cudasmith bench runs/my_run --from KernelBench[/] ·
    [bold]cudasmith bench --model openai:gpt-5-mini --level level1 -n 4[/]
    """
    # Usage errors first, with nothing of torch imported: they come at once.
    if resume is not None:
        also = (["FOLDER"] if folder else []) + (["--task", "--level"] if task or level else [])
        judge.refuse_with_resume(also, "tasks")
    if folder is not None and model:
        raise UsageError("give a folder of solutions or --model, not both")
    if folder is not None and (level is not None or task):
        raise UsageError("--level and --task choose tasks for --model; a folder's files name their tasks")
    if server is not None and model:
        raise UsageError(MODEL_HERE)
    remote = None if server is None or resume is not None else server_lanes(server, judge, lane_flags)
    _check_cheaply(folder, model, level, task, from_dir, config, n, depth, resume, None if remote else judge)

    from cudasmith.bench.folder import FOLDER_STRATEGY, bench_folder
    from cudasmith.harness.options import EvalOptions
    from cudasmith.llm import load_llm_config
    from cudasmith.report.bench_progress import bench_progress
    from cudasmith.report.formats import output_console
    from cudasmith.report.leaderboard import print_leaderboard, print_run_details
    from cudasmith.report.rejudge import print_rejudge, rejudged, summarize_rejudge
    from cudasmith.search.config import SearchSettings, load_optimize_config
    from cudasmith.store import RunStore
    from cudasmith.store.runs import load_run
    from cudasmith.wording import plural

    options = None if resume is not None else remote.options() if remote else judge.options()
    found = None if folder is None else _solution_folder(folder, from_dir, skip_unknown)
    with store_to_write(store) as where, existing_store(where) if resume else RunStore(where) as opened:
        resumed = None if resume is None else opened.run(resume)
        model_run = resumed is not None and resumed.strategy != FOLDER_STRATEGY
        if model_run and server is not None:
            raise UsageError(MODEL_HERE)
        if model or model_run:
            search = load_optimize_config(
                config, strategy=strategy or "one-shot", n=1 if n is None else n, depth=depth
            )
            settings = SearchSettings(
                search=search,
                judge=options or EvalOptions(),  # a resumed bench's own options win
                lanes=lane_flags.lanes(),
                llm=load_llm_config(config, budget_usd=budget),
                budget_usd=budget,
            )
            tasks = (level, task or [], from_dir)
            result = _bench_model(opened, tuple(model or ()), settings, tasks, resume)
        else:
            lanes = remote or (
                lane_flags.lanes() if resumed is None else resumed_lanes(resumed, server, lane_flags)
            )
            with bench_progress() as (progress, on_verdict):
                result = bench_folder(opened, found, from_dir, options, resume, progress, on_verdict, lanes)
        view = load_run(opened, result.run_id)
        layout = str(view.run.options.get("layout") or "")
        kernels = rejudged(opened.candidates(result.run_id)) if layout else []
    rejudge = summarize_rejudge(kernels).to_dict() if kernels else None
    if as_json:
        numbers = {"run": result.run_id, **view.summary.to_dict(), "rejudge": rejudge}
        sys.stdout.write(json.dumps(numbers, indent=2) + "\n")
        return
    console = output_console()
    print_leaderboard([view], console)
    print_run_details(view, console)
    print_rejudge(kernels, console, layout)
    for path, why in result.unmatched:
        console.print(f"[dim]not judged: {path}: {why}[/]", highlight=False)
    console.print(
        f"{plural(result.counts.judged, 'verdict')} given, {result.counts.cached} reused from the store's cache ({opened.path}); "
        f"the report: [bold]cudasmith report {result.run_id} --html report.html[/]",
        highlight=False,
    )
