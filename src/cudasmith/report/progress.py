"""Progress on stderr while a command works: a bar in a terminal, and without one (a log, a pipe, CI) a
line per phase, so that nothing is silent for a minute."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from cudasmith.harness.options import WARNING
from cudasmith.harness.options import Progress as ProgressCallback

# Without a terminal, a line when a phase starts (its first word changes: loading, checking, timing…),
# and another within a long phase once this many seconds have passed without one.
QUIET_LIMIT_S = 30.0


class PhaseLines:
    """A progress callback that writes a line per phase, with the seconds since it was made."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.started = self.last_line = time.monotonic()
        self.phase: str | None = None

    def __call__(self, what: str, done: int, total: int) -> None:
        now = time.monotonic()
        if what.startswith(WARNING):  # kept in view: never folded into the phase it came in
            self.console.print(Text(what, style="yellow"), soft_wrap=True)
            return
        phase = what.split(" ", 1)[0]
        if phase == self.phase and now - self.last_line < QUIET_LIMIT_S:
            return
        self.phase, self.last_line = phase, now
        count = f" ({done}/{total})" if total > 1 else ""
        self.console.print(Text(f"{now - self.started:6.1f} s  {what}{count}"), soft_wrap=True)


@contextmanager
def judge_progress(bar: bool = True, console: Console | None = None) -> Iterator[ProgressCallback]:
    """A progress callback on stderr: a transient bar when stderr is a terminal and `bar` allows one
    (not while JSON goes to stdout: the bar would take stdout over), else a line per phase."""
    console = console or Console(stderr=True)
    if not (bar and console.is_terminal):
        yield PhaseLines(console)
        return
    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"))
    with Progress(*columns, TimeElapsedColumn(), console=console, transient=True) as progress:
        task_id = progress.add_task("starting", total=1)

        def update(what: str, done: int, total: int) -> None:
            if what.startswith(WARNING):  # printed above the bar, where it stays
                progress.console.print(Text(what, style="yellow"))
                return
            progress.update(task_id, description=what, completed=done, total=max(total, 1))

        yield update
