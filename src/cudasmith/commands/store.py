"""The run store as commands open it: reading never makes one, and `latest` names the newest run."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from cudasmith.errors import UsageError

if TYPE_CHECKING:
    from cudasmith.store import RunStore


def store_path(path: Path | None) -> Path:
    """The store a command uses: --store, else $CUDASMITH_STORE, else runs/cudasmith.db."""
    from cudasmith.store import default_store_path

    return path or default_store_path()


def existing_store(path: Path | None) -> RunStore:
    """The run store to read from, or to go on with a run of; a UsageError when there is none."""
    from cudasmith.store import RunStore

    where = store_path(path)
    if not where.is_file():
        raise UsageError(f"no run store at {where} (--store FILE names another)")
    return RunStore(where)


def latest_run_id(store: RunStore, run_id: str) -> str:
    """`latest` names the newest run of the store; any other id is itself."""
    if run_id != "latest":
        return run_id
    runs = store.runs()
    if not runs:
        raise UsageError(f"no runs in {store.path} yet")
    return runs[-1].id


@contextmanager
def store_to_write(path: Path | None) -> Iterator[Path]:
    """The store a command writes its run into. A store (and folder) that the command made is removed
    again if the command ends without a run in it that got anywhere: bad input found late (a task, a
    model's key) or a model that never answered leaves nothing behind."""
    from cudasmith.store import RunStore

    where = store_path(path)
    made = [p for p in (where.parent, where) if not p.exists()]
    try:
        yield where
    finally:
        if where in made and where.is_file():
            with RunStore(where) as store:
                kept = any(run.status != "failed" or store.candidates(run.id) for run in store.runs())
            if not kept:
                for name in (where.name, f"{where.name}-wal", f"{where.name}-shm"):
                    (where.parent / name).unlink(missing_ok=True)
        if where.parent in made and where.parent.is_dir() and not any(where.parent.iterdir()):
            where.parent.rmdir()
