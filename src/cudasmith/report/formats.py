"""How the commands' tables write numbers and configs, the one table style they share, and the console
they print on.

In a terminal, tables fit its width (80 columns and up): values stay on one line, and the one column of
free text in each table wraps instead of being cut. Written to a file or a pipe, every line is as long as
what it holds: a table at its natural width, a sentence on one line, nothing cut or folded.
"""

from __future__ import annotations

import json
from typing import Any

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from cudasmith.tasks.problem import Config

# The width of the console when stdout is no terminal. Rich would assume 80 columns there and fold or cut
# what is wider; nothing printed is this wide, and nothing is padded to it (tables do not expand).
UNBOUNDED_COLUMNS = 2**20

# A config shown in a table: `rows=8 cols=1000`. Longer ones wrap at their spaces.
DEFAULT_CONFIG = "(default)"


def config_text(config: Config | str) -> str:
    """`rows=8 cols=1000` for a config; a redacted hidden config (`hidden#0`) as it is."""
    if isinstance(config, str):
        return config
    parts = [
        f"{key}={value if isinstance(value, str) else json.dumps(value, separators=(',', ':'))}"
        for key, value in config.items()
    ]
    return " ".join(parts) or DEFAULT_CONFIG


def milliseconds(value: float | None) -> str:
    """A time given in ms, in the unit that keeps it short: `43.49 ns`, `102.7 µs`, `12.56 ms`, `1.53 s`."""
    if value is None:
        return "–"
    if value >= 1e3:
        return f"{value / 1e3:.3g} s"
    if value >= 1:
        return f"{value:.4g} ms"
    return f"{value * 1e3:.4g} µs" if value >= 1e-3 else f"{value * 1e6:.4g} ns"


def flop_count(value: float) -> str:
    """`40.00 kFLOP`, `1.10 TFLOP`."""
    for unit, scale in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if value >= scale:
            return f"{value / scale:.2f} {unit}"
    return f"{value:.0f} FLOP"


def plain_table(**options: Any) -> Table:
    """The one table style of every command: a rule under its header (when it has one) and no vertical
    lines, two spaces between columns."""
    return Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True, **options)


def titled(title: str, table: Table) -> Group:
    """A table under its title, which takes a line of its own: a title set on the table itself would be
    wrapped at the table's width, however wide the console."""
    return Group(Text(title, style="table.title"), table)


def output_console() -> Console:
    """The console a command prints its results on (stdout): a terminal's own width; elsewhere (a file,
    a pipe, a CI log) unbounded, so that a table keeps its natural width and no line is cut or folded."""
    console = Console(emoji=False, highlight=False)
    if not console.is_terminal:
        console.width = UNBOUNDED_COLUMNS
    return console
