"""`cudasmith report`: runs side by side in the terminal, as JSON, and as one self-contained HTML page."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from cudasmith.commands.options import JsonOption, StoreOption, value_option
from cudasmith.commands.store import existing_store, latest_run_id


def report_command(
    runs: Annotated[
        list[str],
        typer.Argument(
            metavar="RUN...", help="Run ids (`cudasmith bench` prints its own); `latest` for the newest run."
        ),
    ],
    html: Annotated[
        Path | None,
        value_option(
            "--html",
            metavar="FILE",
            help="Also write one self-contained HTML page with the plots here.",
        ),
    ] = None,
    as_json: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Report runs: the leaderboard (fast_p per baseline, speedups, pass@k, % SOL, cost), verdicts per
    status, rejections per rule and, with --html, a page with fast_p curves, speedup per task, the
    roofline, search progress and a status breakdown. The page loads nothing from the network.

    Example: [bold]cudasmith report latest --html report.html[/]
    """
    from cudasmith.report.leaderboard import print_leaderboard, print_run_details
    from cudasmith.store.runs import load_run

    with existing_store(store) as opened:
        views = [load_run(opened, latest_run_id(opened, run_id)) for run_id in dict.fromkeys(runs)]
    if as_json:
        document = {view.run.id: {"run": view.label, **view.summary.to_dict()} for view in views}
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        print_leaderboard(views)
        for view in views:
            print_run_details(view)
    if html is not None:
        from cudasmith.report.html import write_report

        written = write_report(views, html)
        if not as_json:
            typer.echo(f"report written to {written.resolve()}")
