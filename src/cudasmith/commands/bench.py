"""`cudasmith bench`: a folder of solutions, or a model, over a set of tasks, into the run store."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from cudasmith.commands.options import StoreOption

if TYPE_CHECKING:
    from cudasmith.bench.folder import OnVerdict, Progress
    from cudasmith.store import CandidateRecord

stderr = Console(stderr=True)
# A verdict's reason is cut to this many characters in the line printed as it arrives.
REASON_CHARS = 160


def _verdict_line(candidate: CandidateRecord, cached: bool) -> str:
    from rich.markup import escape

    from cudasmith.report.metrics import speedup_of
    from cudasmith.report.rules import rule_broken
    from cudasmith.report.verdict_table import STATUS_STYLE

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
    return (
        f"[{STATUS_STYLE.get(status, 'bold')}]{status:<13}[/] {escape(where)}: {escape(detail)}{from_cache}"
    )


@contextmanager
def _progress(enabled: bool) -> Iterator[tuple[Progress | None, OnVerdict]]:
    """The progress bar over kernels (when there is a terminal) and a line printed per verdict."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bar

    bar = Bar(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr,
        transient=True,
        disable=not enabled,
    )
    with bar:
        task_id = bar.add_task("starting", total=None)

        def update(what: str, done: int, total: int) -> None:
            bar.update(task_id, description=f"judging {what}", completed=done, total=total)

        def line(candidate: CandidateRecord, cached: bool) -> None:
            bar.console.print(_verdict_line(candidate, cached), highlight=False)
            bar.advance(task_id)

        yield (update if enabled else None), line


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
            "--from", help="KernelBench checkout whose problems the kernels answer.", show_default=False
        ),
    ] = None,
    device: Annotated[
        str | None,
        typer.Option("--device", "-d", help="cuda or cpu \\[default: cuda when a GPU is visible, else cpu]"),
    ] = None,
    seeds: Annotated[int, typer.Option(help="Input sets checked per config.")] = 3,
    timing: Annotated[bool, typer.Option("--timing/--no-timing", help="Time correct kernels.")] = True,
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
        typer.Option(help="Go on with a stopped bench run (its folder and options).", show_default=False),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the run's numbers as one JSON object.")
    ] = False,
    store: StoreOption = None,
) -> None:
    """Bench a folder of existing solutions: judge every file, then print correctness, fast_p against
    each baseline, speedups, pass@k, % of speed of light, verdicts per status and rejections per rule.

    Re-judging a KernelBench run says how many of its "correct" kernels hold up (its eval_results.json
    is read when present) and which rule the others broke. Everything goes into the run store;
    `--resume RUN` goes on after a stop, and a kernel judged before (same code, task, device, judge
    and options) reuses its verdict.

    Example: [bold]cudasmith bench runs/my_run --from KernelBench[/] · [bold]cudasmith bench kernels/ --device cpu[/]
    """
    from cudasmith.api import default_device
    from cudasmith.bench.folder import bench_folder
    from cudasmith.errors import UsageError
    from cudasmith.harness.baselines import parse_baselines
    from cudasmith.harness.runner import EvalOptions
    from cudasmith.report.leaderboard import print_leaderboard, print_run_details
    from cudasmith.report.runs import load_run
    from cudasmith.store import RunStore

    if seeds < 1:
        raise UsageError("--seeds must be at least 1")
    options = EvalOptions(
        device=device or default_device(),
        seed=seed,
        seeds_per_config=seeds,
        timing=timing,
        baselines=parse_baselines(baselines) if baselines else None,
    )
    with RunStore(store) as opened:
        with _progress(enabled=stderr.is_terminal) as (progress, on_verdict):
            result = bench_folder(opened, folder, kernelbench, options, resume, progress, on_verdict)
        view = load_run(opened, result.run_id)
    if as_json:
        sys.stdout.write(json.dumps({"run": result.run_id, **view.summary.to_dict()}, indent=2) + "\n")
        return
    console = Console()
    print_leaderboard([view], console)
    print_run_details(view, console)
    for path, why in result.unmatched:
        console.print(f"[dim]not judged: {path}: {why}[/]", highlight=False)
    console.print(
        f"{result.judged} kernels judged, {result.cached} verdicts reused from the store ({opened.path}); "
        f"the report: [bold]cudasmith report {result.run_id} --html report.html[/]",
        highlight=False,
    )
