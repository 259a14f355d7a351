"""How the terminal tables write numbers and configs, and the table style they share.

Tables are designed for 80 columns (a default terminal, and what Rich assumes when output is piped):
values stay on one line, and the one column of free text in each table wraps instead of being cut.
"""

from __future__ import annotations

import json
from typing import Any

from rich import box
from rich.table import Table

from cudasmith.tasks.problem import Config

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
    """A table with a rule under its header and no vertical lines: two spaces between columns."""
    return Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, **options)
