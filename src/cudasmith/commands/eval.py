"""`cudasmith eval`: judge solutions against a task, one session for all of them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from cudasmith.commands.common import EXIT_CORRECT, EXIT_VERDICT, pick_problem, solution_files
from cudasmith.commands.judging import JudgeFlags, judging
from cudasmith.commands.options import FromOption, JsonOption, ProblemOption, TaskOption


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
    *,
    judge: JudgeFlags,
) -> None:
    """Judge SOLUTIONS against a task: correct on every config and input set, and how fast.

    Several solutions (or folders of them) are judged in one session: the reference outputs, the baselines
    and warm workers are shared, so each costs seconds; each still runs in a fresh, isolated process.

    Exit code 0 when every verdict is correct, 1 for any other verdict, 2 for bad usage.

    Example: [bold]cudasmith eval examples/softmax_cpu.py --task level1/softmax --device cpu[/]
    """
    from cudasmith.exec.ahead import judge_built_ahead
    from cudasmith.harness.session import Judge
    from cudasmith.report.progress import judge_progress
    from cudasmith.report.verdict_table import print_summary, print_verdict

    loaded = pick_problem(None, task, problem, from_dir)
    files = solution_files(solutions)
    options = judge.options()
    verdicts = []
    with (
        judge_progress(bar=not as_json) as progress,
        Judge(loaded, options, progress, candidates=len(files)) as session,
    ):
        for verdict in judge_built_ahead(session, files):
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
