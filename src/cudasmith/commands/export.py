"""`cudasmith export`: a run's trajectories for SFT and RL, as JSON Lines or Parquet."""

from __future__ import annotations

from typing import Annotated

import typer

from cudasmith.commands.options import OutputOption, StoreOption
from cudasmith.commands.store import existing_store, latest_run_id


def export_command(
    run: Annotated[
        str, typer.Argument(metavar="RUN", help="Run id; `latest` for the newest run.", show_default=False)
    ],
    fmt: Annotated[str, typer.Option("--format", "-f", metavar="FORMAT", help="jsonl or parquet.")] = "jsonl",
    output: OutputOption = None,
    store: StoreOption = None,
) -> None:
    """Export a run's trajectories: one row per turn (a model's judged answer) with its prompt, response,
    extracted code, full verdict, reward, discounted return, lineage, turn index and the chain of turns
    before it. The reward is Kevin's: 0 unless correct (a caught cheat earns nothing), a bonus plus the
    speedup over eager PyTorch when correct; the return adds the refinements' rewards, discounted per
    step (values in cudasmith.report.export). Written beside the run store (runs/RUN.trajectories.jsonl)
    unless -o names a file.

    Example: [bold]cudasmith export latest --format parquet[/]
    """
    from cudasmith.report.export import export_run
    from cudasmith.wording import plural

    with existing_store(store) as opened:
        run_id = latest_run_id(opened, run)
        where = output or opened.path.parent / f"{run_id}.trajectories.{fmt}"
        path, rows = export_run(opened, run_id, where, fmt)
    typer.echo(f"{plural(rows, 'turn')} of {run_id} written to {path.resolve()}")
