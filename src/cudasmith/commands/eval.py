"""`cudasmith eval`: judge solutions against a task, one session for all of them."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from cudasmith.commands.common import (
    EXIT_CORRECT,
    EXIT_VERDICT,
    pick_problem,
    pick_problem_file,
    solution_files,
)
from cudasmith.commands.judging import JudgeFlags, judging
from cudasmith.commands.options import FromOption, JsonOption, ProblemOption, ServerOption, TaskOption
from cudasmith.errors import CudasmithError

if TYPE_CHECKING:
    from cudasmith.exec.ahead import BuildsAhead
    from cudasmith.harness.verdict import Verdict


@judging
def eval_command(
    solutions: Annotated[
        list[Path],
        typer.Argument(
            metavar="SOLUTION",
            help="Solution files defining ModelNew, or folders of them.",
            show_default=False,
        ),
    ],
    task: TaskOption = None,
    problem: ProblemOption = None,
    from_dir: FromOption = None,
    as_json: JsonOption = False,
    samples: Annotated[
        bool, typer.Option("--samples", help="Include raw timing samples in --json output.")
    ] = False,
    server: ServerOption = None,
    explain_defences: Annotated[
        bool,
        typer.Option(
            "--explain-defences",
            is_eager=True,
            callback=lambda asked: _explain_defences() if asked else None,
            help="Print each defence of the judge: the layer it lives in, the rules it names, what it cannot "
            "stop; then exit.",
        ),
    ] = False,
    *,
    judge: JudgeFlags,
) -> None:
    """Judge SOLUTIONS against a task: correct on every config and input set, and how fast.

    Several solutions (or folders of them) are judged in one session: the reference outputs, the baselines
    and warm workers are shared, so each costs seconds; each still runs in a fresh, isolated process.

    Exit code 0 when every verdict is correct, 1 for any other verdict, 2 for bad usage.

    Example: [bold]cudasmith eval examples/softmax_cpu.py --task level1/softmax --device cpu[/]
    """
    files = solution_files(solutions)
    if server is not None:
        from cudasmith.commands.remote import judged_on_server

        _show(judged_on_server(server, files, task, problem, from_dir, judge), len(files), as_json, samples)

    from cudasmith.exec.ahead import judge_built_ahead

    # Usage errors first, with nothing of torch imported: they come at once.
    pick_problem_file(None, task, problem, from_dir)
    judge.check()
    # The builds go before this process imports torch (seconds): the problem's file as read, the device
    # as named or as the CUDA driver tells. Used once both are known to be the judge's.
    early = _early_builds(task, problem, from_dir, judge.device, files)

    from cudasmith.harness.session import Judge
    from cudasmith.report.progress import judge_progress

    with contextlib.ExitStack() as owned:
        if early is not None:
            owned.callback(early.close)
        loaded = pick_problem(None, task, problem, from_dir)
        options = judge.options()
        if early is not None and not early.serves(loaded, options):  # another file or device: dropped
            early.close()
            early = None
        progress = owned.enter_context(judge_progress(bar=not as_json))
        session = owned.enter_context(Judge(loaded, options, progress, candidates=len(files)))
        _show(judge_built_ahead(session, files, ahead=early), len(files), as_json, samples)


def _show(verdicts: Iterable[Verdict], count: int, as_json: bool, samples: bool) -> NoReturn:
    """Print each verdict as it comes (JSON, or a table), then the summary of several; exit with the
    verdict contract's code."""
    from cudasmith.report.verdict_table import print_summary, print_verdict

    shown = []
    for verdict in verdicts:
        shown.append(verdict)
        if as_json:
            indent = 2 if count == 1 else None
            sys.stdout.write(json.dumps(verdict.to_dict(samples=samples), indent=indent) + "\n")
            sys.stdout.flush()
        else:
            print_verdict(verdict)
    if not as_json and len(shown) > 1:
        print_summary(shown)
    raise typer.Exit(EXIT_CORRECT if shown and all(v.correct for v in shown) else EXIT_VERDICT)


def _early_builds(
    task: str | None, problem: Path | None, from_dir: Path | None, device: str | None, files: list[Path]
) -> BuildsAhead | None:
    """Builds sent before the problem is loaded, where its file and the device can be told without torch;
    None otherwise, or where the names are bad (loading the problem then says what is wrong)."""
    from cudasmith.exec.ahead import builds_before_loading
    from cudasmith.tasks.lookup import find_problem_file

    try:
        problem_file, name = find_problem_file(task, problem, from_dir)
        return builds_before_loading(problem_file, name, device, files) if problem_file.is_file() else None
    except (CudasmithError, OSError):
        return None


def _explain_defences() -> None:
    """Print the judge's defences (harness/witnesses/defences.py), layer by layer, and exit."""
    from rich.markup import escape

    from cudasmith.harness.witnesses.defences import DEFENCES, LAYERS
    from cudasmith.report.formats import output_console

    console = output_console()
    console.print(
        "[bold]The judge's defences[/], by the layer each lives in. What a verdict rests on (the outputs "
        "right, their time, the evidence whole) is measured by the parent or the judge's own worker; what "
        "runs in the candidate's process is a second line."
    )
    for layer in LAYERS:
        console.print(f"\n[bold underline]{layer}[/]")
        for defence in (d for d in DEFENCES if d.layer == layer):
            rules = ", ".join(str(rule) for rule in defence.rules)
            console.print(f"  [bold]{escape(defence.name)}[/] [dim]({rules})[/]")
            console.print(f"    does: {escape(defence.does)}")
            console.print(f"    cannot stop: {escape(defence.cannot_stop)}")
    raise typer.Exit(EXIT_CORRECT)
