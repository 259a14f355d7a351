"""Verdicts as tables in the terminal, and the progress bar of long evaluations."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cudasmith.harness.baselines import BASELINES
from cudasmith.harness.options import Progress as ProgressCallback
from cudasmith.harness.verdict import Verdict

STATUS_STYLE = {
    "correct": "bold green",
    "incorrect": "bold red",
    "rejected": "bold magenta",
    "compile_error": "bold yellow",
    "runtime_error": "bold yellow",
    "timeout": "bold yellow",
}


def _ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value * 1e3:.1f} µs" if value < 1 else f"{value:.3f} ms"


def _config_text(config: dict[str, Any] | str) -> str:
    return config if isinstance(config, str) else (json.dumps(config)[1:-1] or "(default)")


def print_verdict(verdict: Verdict, console: Console | None = None) -> None:
    """The verdict as a short header and one row per config."""
    console = console or Console()
    style = STATUS_STYLE.get(verdict.status, "bold")
    console.print(f"[{style}]{verdict.status}[/]  {verdict.reason}", highlight=False)
    console.print(f"[dim]{verdict.task} · {verdict.solution} · {verdict.device} · {verdict.wall_s:.1f} s[/]")
    if verdict.configs:
        table = Table(show_edge=False, pad_edge=False)
        for column in ("#", "config", "status", "rel err", "time", verdict.baseline, "speedup", "% SOL"):
            table.add_column(column, justify="left" if column in {"config", "status"} else "right")
        for result in verdict.configs:
            table.add_row(
                str(result.index),
                _config_text(result.config),
                f"[{STATUS_STYLE.get(result.status, '')}]{result.status}[/]",
                "–" if result.rel_err is None else f"{result.rel_err:.1e}",
                _ms(result.time_ms),
                _ms(result.baseline_ms),
                "–" if result.speedup is None else f"{result.speedup:.2f}x",
                "–" if result.sol_pct is None else f"{result.sol_pct:.1f}",
            )
        console.print(table)
    others = [f"{s:.2f}x {BASELINES[n]}" for n, s in verdict.speedups.items() if n != "eager"]
    if others:
        console.print(f"[dim]also {', '.join(others)} (geometric means)[/]")
    if verdict.timing:
        graph = ", CUDA-graph replays" if verdict.timing.get("launch") == "graph" else ""
        sol = "; % SOL: of this device's measured peaks (cudasmith device)" if verdict.peaks else ""
        console.print(f"[dim]timed with {verdict.timing.get('l2_state')} L2{graph}{sol}[/]")
    for skipped in verdict.skipped_configs:
        console.print(f"[dim]skipped config {skipped['index']}: {skipped['reason']}[/]")
    for note in verdict.notes:
        console.print(f"[dim]note: {note}[/]")
    if verdict.status == "compile_error" and verdict.artifacts.get("traceback"):
        console.print(f"[dim]{verdict.artifacts['traceback'].strip()[-1500:]}[/]", highlight=False)


def print_summary(verdicts: list[Verdict], console: Console | None = None) -> None:
    """One row per verdict of a session: status, speedup against eager PyTorch, wall time."""
    console = console or Console()
    table = Table(title=f"{len(verdicts)} solutions", show_edge=False, pad_edge=False)
    for column in ("solution", "status", "speedup", "wall"):
        table.add_column(column, justify="left" if column in {"solution", "status"} else "right")
    for verdict in verdicts:
        table.add_row(
            verdict.solution,
            f"[{STATUS_STYLE.get(verdict.status, '')}]{verdict.status}[/]",
            "–" if verdict.speedup is None else f"{verdict.speedup:.2f}x",
            f"{verdict.wall_s:.1f} s",
        )
    console.print(table)
    correct = sum(1 for v in verdicts if v.correct)
    console.print(
        f"[dim]{correct} of {len(verdicts)} correct; speedups against {verdicts[0].baseline} (geometric mean)[/]"
    )


@contextmanager
def progress_bar(enabled: bool) -> Iterator[ProgressCallback | None]:
    """A progress callback drawing on stderr, or None when there is no terminal to draw on."""
    if not enabled:
        yield None
        return
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    with bar:
        task_id = bar.add_task("starting", total=1)

        def update(what: str, done: int, total: int) -> None:
            bar.update(task_id, description=what, completed=done, total=max(total, 1))

        yield update
