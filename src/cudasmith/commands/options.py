"""Options the bench, report and export commands spell the same way."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from cudasmith.store import RunStore

StoreOption = Annotated[
    Path | None,
    typer.Option(
        help="Run store file \\[default: $CUDASMITH_STORE, else ./runs/cudasmith.db]", show_default=False
    ),
]


def existing_store(path: Path | None) -> RunStore:
    """The run store to read from; a UsageError when there is none (reading never makes one)."""
    from cudasmith.errors import UsageError
    from cudasmith.store import RunStore, default_store_path

    where = path or default_store_path()
    if not where.is_file():
        raise UsageError(f"no run store at {where} (--store PATH, or run `cudasmith bench` first)")
    return RunStore(where)


def latest_run_id(store: RunStore, run_id: str) -> str:
    """`latest` names the newest run of the store; any other id is itself."""
    from cudasmith.errors import UsageError

    if run_id != "latest":
        return run_id
    runs = store.runs()
    if not runs:
        raise UsageError(f"no runs in {store.path} yet")
    return runs[-1].id
