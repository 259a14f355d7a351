"""`cudasmith bench` while it runs: a bar over the kernels in a terminal, and a line per verdict as it
arrives (without a terminal, with how many are done and the time left)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.progress import Progress as Bar

from cudasmith.report.verdict_table import status_markup
from cudasmith.store.integrity import TAMPERED_REASON
from cudasmith.store.metrics import speedup_of
from cudasmith.store.rules import rule_broken

if TYPE_CHECKING:
    from cudasmith.bench.folder import OnVerdict
    from cudasmith.harness.options import Progress
    from cudasmith.store import CandidateRecord

# A verdict's reason is cut to this many characters in the line printed as it arrives.
REASON_CHARS = 160
# Statuses are padded to this width, so that the lines' tasks line up.
STATUS_WIDTH = 13


def verdict_line(candidate: CandidateRecord, cached: bool) -> str:
    """One judged kernel as Rich markup: status, task and file, speedup or what went wrong."""
    verdict = candidate.verdict
    status = str(candidate.status)
    speedup = speedup_of(verdict)
    if verdict is None:
        detail = TAMPERED_REASON if candidate.tampered else "not judged"
    elif speedup is not None:
        detail = f"{speedup:.3g}× eager PyTorch on {verdict.device}"
    else:
        rule = rule_broken(verdict)
        reason = verdict.reason[:REASON_CHARS]
        detail = f"{rule}: {reason}" if rule else reason
    where = f"{candidate.meta.get('task')} {Path(candidate.path or candidate.key).name}"
    from_cache = " [dim](cached verdict)[/]" if cached else ""
    return f"{status_markup(status, width=STATUS_WIDTH)} {escape(where)}: {escape(detail)}{from_cache}"


class Eta:
    """Kernels done and left, and the time left at the pace of the kernels judged so far (verdicts
    taken from the cache come at once and do not set the pace)."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.first_done: int | None = None
        self.done = self.total = 0

    def update(self, done: int, total: int) -> None:
        """The judge's progress: kernels done of the run's total."""
        if self.first_done is None:
            self.first_done, self.started = done, time.monotonic()
        self.done, self.total = done, total

    def from_cache(self) -> None:
        """One more kernel done at once, its verdict read from the store's cache: counted, never paced."""
        self.done += 1
        self.first_done = (self.first_done or 0) + 1

    def text(self) -> str:
        left = max(0, self.total - self.done)
        judged = self.done - (self.first_done or 0)
        if judged <= 0 or not left:
            return f"{self.done} of {self.total} done, {left} left"
        remaining = (time.monotonic() - self.started) / judged * left
        return f"{self.done} of {self.total} done, {left} left, about {remaining:.0f} s to go"


@contextmanager
def bench_progress(console: Console | None = None) -> Iterator[tuple[Progress, OnVerdict]]:
    """The progress bar over kernels (in a terminal) and a line printed per verdict."""
    console = console or Console(stderr=True)
    terminal = console.is_terminal
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    bar = Bar(
        *columns,
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
        disable=not terminal,
    )
    eta = Eta()
    with bar:
        task_id = bar.add_task("starting", total=None)

        def update(what: str, done: int, total: int) -> None:
            eta.update(done, total)
            bar.update(task_id, description=f"judging {what}", completed=done, total=total)

        def line(candidate: CandidateRecord, cached: bool) -> None:
            if cached:
                eta.from_cache()
            progress = "" if terminal else f" [dim]({eta.text()})[/]"
            # Without a terminal (a log), one line per verdict however long: never folded at 80 columns.
            bar.console.print(
                verdict_line(candidate, cached) + progress, highlight=False, soft_wrap=not terminal
            )
            bar.advance(task_id)

        yield update, line
