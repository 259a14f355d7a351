"""Tasks as tables in the terminal: the listing of `cudasmith tasks` and the detail of `cudasmith show`."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table


def _bytes(value: float | None) -> str:
    if value is None:
        return "?"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value:.0f} B"


def _flops(value: float) -> str:
    for unit, scale in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if value >= scale:
            return f"{value / scale:.2f} {unit}"
    return f"{value:.0f} FLOP"


def _milliseconds(value: float | None) -> str:
    if value is None:
        return "–"
    if value >= 1e3:
        return f"{value / 1e3:.2f} s"
    return f"{value:.3f} ms" if value >= 1 else f"{value * 1e3:.2f} µs"


def _config_text(config: dict[str, Any]) -> str:
    return json.dumps(config)[1:-1] or "(default)"


def print_task_list(
    rows: list[dict[str, Any]],
    counts: dict[str, int],
    unloaded: list[dict[str, str]] | None = None,
    console: Console | None = None,
) -> None:
    """One row per task, then the count per level and the files that were not loaded."""
    console = console or Console()
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("task", no_wrap=True)
    table.add_column("dtype", no_wrap=True)
    table.add_column("configs", no_wrap=True, justify="right")
    table.add_column("expert", no_wrap=True)
    table.add_column("what it computes", min_width=24, ratio=1)
    for row in rows:
        table.add_row(
            row["name"],
            row["dtype"] or "–",
            f"{row['configs']}+{row['hidden_configs']}",
            row["expert"] or "–",
            row["description"],
        )
    console.print(table)
    for entry in unloaded or []:
        console.print(f"[dim]{entry['status']} {entry['name']}: {entry['reason']}[/]", highlight=False)
    per_level = " · ".join(f"{level} {count}" for level, count in counts.items())
    console.print(
        f"[dim]{sum(counts.values())} tasks ({per_level}). configs: public+hidden. Baselines: eager "
        "PyTorch and torch.compile for every task, and the expert where one is named. "
        "`cudasmith show TASK` prints one task's reference, sizes and roofline.[/]",
        highlight=False,
    )


def print_task_details(details: dict[str, Any], source: bool = True, console: Console | None = None) -> None:
    """A task's summary, its reference source, and per-config sizes, work and roofline."""
    console = console or Console()
    console.print(f"[bold]{details['name']}[/]  {details['description']}", highlight=False)
    judged = "its validator" if details["validator"] else "numeric comparison against float64"
    torch_ops = "allowed" if details["allowed_torch_ops"] == "all" else "refused"
    facts = [
        f"dtype {details['dtype'] or 'not declared (float32 assumed)'}",
        f"L2 {details['l2_state']} when timed",
        f"judged by {judged}",
        f"PyTorch compute in a solution: {torch_ops}",
        "baselines: "
        + ", ".join(f"expert ({details['expert']})" if b == "expert" else b for b in details["baselines"]),
    ]
    console.print(" · ".join(facts), highlight=False)
    tolerance = details["tolerance"]
    if tolerance and not details["validator"]:
        overridden = " (the task's own)" if details["tolerance_overrides"] else ""
        console.print(
            f"tolerance{overridden}: rtol {tolerance['rtol']:g}, atol {tolerance['atol']:g} × output RMS, "
            f"norm {tolerance['norm']:g}, or {details['calibration_factor']:g}× the reference's own error "
            "in the task dtype if larger",
            highlight=False,
        )
    console.print(f"[dim]{details['path']}[/]", highlight=False)
    if source:
        console.print(Syntax(details["source"], "python", line_numbers=False, word_wrap=True))
    table = Table(show_edge=False, pad_edge=False)
    columns = (
        "#",
        "config",
        "inputs",
        "weights",
        "outputs",
        "FLOPs",
        "bytes moved",
        "FLOP/B",
        "SOL",
        "floor",
    )
    for column in columns:
        table.add_column(column, justify="left" if column == "config" else "right")
    for figure in details["config_figures"]:
        intensity = figure["intensity"]
        table.add_row(
            "hidden" if figure["hidden"] else str(figure["index"]),
            _config_text(figure["config"]),
            _bytes(figure.get("input_bytes")),
            _bytes(figure.get("parameter_bytes", 0)),
            _bytes(figure.get("output_bytes")),
            "?" if figure["flops"] is None else _flops(figure["flops"]),
            _bytes(figure["bytes_moved"]),
            "–" if intensity is None else f"{intensity:.3g}",
            _milliseconds(figure.get("sol_ms")),
            _milliseconds(figure.get("floor_ms")),
        )
    console.print(table)
    partial = [figure for figure in details["config_figures"] if "unknown" in figure]
    if partial:
        which = "every config" if len(partial) == len(details["config_figures"]) else "some configs"
        console.print(
            f"[dim]'?' for {which}: the reference cannot run on meta tensors "
            f"({partial[0]['unknown'][:120]}), so only what the problem declares is known[/]",
            highlight=False,
        )
    peaks = details["peaks"]
    if peaks is None:
        console.print(
            "[dim]SOL and floor: device peaks not measured yet on this device; `cudasmith device` measures them[/]"
        )
    else:
        console.print(
            f"[dim]SOL: the time at {peaks['device']}'s measured peaks ({peaks['measured_at']}); floor: faster "
            "than this is impossible (cudasmith.harness.roofline)[/]",
            highlight=False,
        )
