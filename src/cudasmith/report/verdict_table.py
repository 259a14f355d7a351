"""Verdicts as tables in the terminal."""

from __future__ import annotations

from collections.abc import Callable

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from cudasmith.harness.baselines import BASELINES
from cudasmith.harness.verdict import ConfigResult, Verdict
from cudasmith.report.formats import config_text, milliseconds, output_console, plain_table, titled
from cudasmith.wording import plural

STATUS_STYLE = {
    "correct": "bold green",
    "incorrect": "bold red",
    "rejected": "bold magenta",
    "compile_error": "bold yellow",
    "runtime_error": "bold yellow",
    "timeout": "bold yellow",
    "not_checked": "dim",
    # A stored verdict that fails its MAC (store/integrity.py).
    "tampered": "bold red reverse",
    # A run's candidates that got no verdict: a duplicate the search skipped, or one not judged yet.
    "skipped": "dim",
    "unjudged": "dim",
}
# A status with no style of its own (one a newer cudasmith wrote into the store, say) is shown plain.
PLAIN_STATUS = "default"


def status_markup(status: str, width: int = 0) -> str:
    """A status as Rich markup in its colour, padded to `width`; any string renders, styled or not."""
    return f"[{STATUS_STYLE.get(status, PLAIN_STATUS)}]{escape(f'{status:<{width}}')}[/]"


# Lines of a solution's printed output shown at its start and at its end (the verdict's JSON keeps more).
OUTPUT_HEAD_LINES = 8
OUTPUT_TAIL_LINES = 8
# Lines of a compiler's log shown under a compile error (its first errors are at its start).
COMPILE_LOG_LINES = 15
# Statuses whose traceback (the solution's frames only) helps the author.
TRACEBACK_STATUSES = ("compile_error", "runtime_error")


def _speedup(speedup: float | None, noisy_range: list[float] | None) -> str:
    """`1.93x`, with its range where the timing was noisy, to three figures: `1.93x (0.9–3.1)`,
    `101.97x (62–195)` (short enough that a config table with % SOL fits 80 columns)."""
    if speedup is None:
        return "–"
    return f"{speedup:.2f}x" + ("" if noisy_range is None else " ({:.3g}–{:.3g})".format(*noisy_range))


def _config_table(verdict: Verdict) -> Table:
    """One row per config; the columns that say something for this verdict (times only when timed,
    a status column only when some config failed)."""
    configs = verdict.configs
    columns: list[tuple[str, Callable[[ConfigResult], str]]] = [
        ("#", lambda r: str(r.index)),
        ("config", lambda r: config_text(r.config)),
    ]
    if any(r.status != "correct" for r in configs):
        columns.append(("status", lambda r: status_markup(r.status)))
    columns.append(("rel err", lambda r: "–" if r.rel_err is None else f"{r.rel_err:.1e}"))
    if any(r.time_ms is not None for r in configs):
        columns += [
            ("time", lambda r: milliseconds(r.time_ms)),
            (verdict.baseline.removesuffix(" PyTorch"), lambda r: milliseconds(r.baseline_ms)),
            ("speedup", lambda r: _speedup(r.speedup, r.speedup_ci95 if r.noisy else None)),
        ]
    if any(r.sol_pct is not None for r in configs):
        columns.append(("% SOL", lambda r: "–" if r.sol_pct is None else f"{r.sol_pct:.1f}"))
    table = plain_table()
    for name, _ in columns:
        if name == "config":
            table.add_column(name, overflow="fold", ratio=1)
        else:
            table.add_column(name, no_wrap=True, justify="left" if name == "status" else "right")
    for result in configs:
        table.add_row(*(cell(result) for _, cell in columns))
    return table


def _head_and_tail(text: str, head: int, tail: int) -> str:
    lines = text.rstrip("\n").splitlines()
    if len(lines) <= head + tail:
        return "\n".join(lines)
    left_out = len(lines) - head - tail
    return "\n".join([*lines[:head], f"[… {plural(left_out, 'line')} …]", *lines[len(lines) - tail :]])


def _block(console: Console, title: str, text: str) -> None:
    """Text the solution or its compiler wrote, framed and titled so it is not read as the judge's."""
    body = Text(text, style="dim", overflow="fold")
    console.print(Panel(body, title=title, title_align="left", box=box.ROUNDED, expand=False))


def print_verdict(verdict: Verdict, console: Console | None = None) -> None:
    """The verdict as a short header and one row per config, then what the solution printed."""
    console = console or output_console()
    console.print(f"{status_markup(verdict.status)}  {escape(verdict.reason)}", highlight=False)
    console.print(
        escape(f"{verdict.task} · {verdict.solution} · {verdict.device} · {verdict.wall_s:.1f} s"),
        style="dim",
        highlight=False,
    )
    if verdict.configs:
        console.print(_config_table(verdict))
    others = [f"{s:.2f}x {BASELINES[n]}" for n, s in verdict.speedups.items() if n != "eager"]
    if others:
        console.print(f"[dim]also {', '.join(others)} (geometric means)[/]")
    if verdict.timing:
        graph = ", CUDA-graph replays" if verdict.timing.launch == "graph" else ""
        sol = "; % SOL: of this device's measured peaks (cudasmith device)" if verdict.peaks else ""
        console.print(f"[dim]timed with {verdict.timing.l2_state} L2{graph}{sol}[/]")
        for doubt in verdict.peaks.doubts() if verdict.peaks else []:
            console.print(
                f"[yellow]% SOL of matrix work inflated: {escape(doubt)} (cudasmith device --remeasure)[/]"
            )
    for skipped in verdict.skipped_configs:
        console.print(f"[dim]skipped config {skipped.index}: {escape(skipped.reason)}[/]")
    for note in verdict.notes:
        console.print(f"[dim]note: {escape(note)}[/]")
    artifacts = verdict.artifacts
    if verdict.status in TRACEBACK_STATUSES and artifacts.get("traceback", "").strip():
        _block(console, "the solution's traceback", artifacts["traceback"].strip())
    log = artifacts.get("compile_log", "").strip()
    if verdict.status == "compile_error" and len(log.splitlines()) > 1:
        _block(console, "compiler output", _head_and_tail(log, COMPILE_LOG_LINES, 0))
    for stream in ("stdout", "stderr"):
        if artifacts.get(stream, "").strip():
            title = f"printed by the solution ({stream}), first and last lines"
            _block(console, title, _head_and_tail(artifacts[stream], OUTPUT_HEAD_LINES, OUTPUT_TAIL_LINES))


def print_summary(verdicts: list[Verdict], console: Console | None = None) -> None:
    """One row per verdict of a session: status, speedup against eager PyTorch, wall time."""
    console = console or output_console()
    table = plain_table()
    for column in ("solution", "status", "speedup", "wall"):
        table.add_column(column, justify="left" if column in {"solution", "status"} else "right")
    for verdict in verdicts:
        table.add_row(
            escape(verdict.solution),
            status_markup(verdict.status),
            _speedup(
                verdict.speedup, verdict.speedup_ci95 if any(r.noisy for r in verdict.configs) else None
            ),
            f"{verdict.wall_s:.1f} s",
        )
    console.print(titled(f"{len(verdicts)} solutions", table))
    correct = sum(1 for v in verdicts if v.correct)
    console.print(
        f"[dim]{correct} of {len(verdicts)} correct; speedups against {verdicts[0].baseline} (geometric mean)[/]"
    )
