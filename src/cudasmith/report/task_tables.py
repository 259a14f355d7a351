"""Tasks as tables in the terminal: the listing of `cudasmith tasks` and the detail of `cudasmith show`."""

from __future__ import annotations

from rich.console import Console, Group
from rich.markup import escape
from rich.padding import Padding
from rich.syntax import Syntax
from rich.text import Text

from cudasmith.harness.task_details import TaskDetails
from cudasmith.report.formats import (
    config_text,
    flop_count,
    milliseconds,
    output_console,
    plain_table,
    titled,
)
from cudasmith.tasks.catalog import TaskRow
from cudasmith.wording import byte_size, plural


def print_task_list(
    rows: list[TaskRow],
    counts: dict[str, int],
    unloaded: list[dict[str, str]] | None = None,
    console: Console | None = None,
) -> None:
    """One row per task (its description wrapped under its name), then the count per level and the
    files that were not loaded."""
    console = console or output_console()
    table = plain_table()
    table.add_column("task", ratio=1)
    table.add_column("dtype", no_wrap=True)
    table.add_column("configs", no_wrap=True, justify="right")
    table.add_column("expert", no_wrap=True)
    for row in rows:
        described = Text(row["description"] or "(no description)", style="dim")
        table.add_row(
            Group(Text(row["name"]), Padding(described, (0, 0, 0, 2))),
            row["dtype"] or "–",
            f"{row['configs']}+{row['hidden_configs']}",
            row["expert"] or "–",
        )
    console.print(table)
    for entry in unloaded or []:
        console.print(
            escape(f"{entry['status']} {entry['name']}: {entry['reason']}"), style="dim", highlight=False
        )
    per_level = " · ".join(f"{level} {count}" for level, count in counts.items())
    console.print(
        f"[dim]{plural(sum(counts.values()), 'task')} ({per_level}). configs: public+hidden. Baselines: "
        "eager PyTorch and torch.compile for every task, and the expert where one is named. "
        "`cudasmith show TASK` prints one task's reference, sizes and roofline.[/]",
        highlight=False,
    )


def print_task_details(details: TaskDetails, source: bool = True, console: Console | None = None) -> None:
    """A task's summary, its reference source, and per-config sizes, work and roofline."""
    console = console or output_console()
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
        # As written, never wrapped or cut at the console's width (soft_wrap): copied code must still run.
        code = Syntax(details["source"], "python").highlight(details["source"])
        code.rstrip()
        console.print(code, soft_wrap=True)
    figures = details["config_figures"]
    sizes = plain_table()
    sizes.add_column("#", no_wrap=True, justify="right")
    sizes.add_column("config", ratio=1, overflow="fold")
    for column in ("inputs", "weights", "outputs"):
        sizes.add_column(column, no_wrap=True, justify="right")
    work = plain_table()
    for column in ("#", "FLOPs", "bytes moved", "FLOP/B", "SOL", "floor"):
        work.add_column(column, no_wrap=True, justify="right")
    for figure in figures:
        label = str(figure["index"])
        sizes.add_row(
            label,
            config_text(figure["config"]),
            byte_size(figure.get("input_bytes")),
            byte_size(figure.get("parameter_bytes", 0)),
            byte_size(figure.get("output_bytes")),
        )
        intensity = figure["intensity"]
        work.add_row(
            label,
            "?" if figure["flops"] is None else flop_count(figure["flops"]),
            byte_size(figure["bytes_moved"]),
            "–" if intensity is None else f"{intensity:.3g}",
            milliseconds(figure.get("sol_ms")),
            milliseconds(figure.get("floor_ms")),
        )
    console.print(titled("sizes", sizes))
    console.print(titled("work and roofline", work))
    if details["hidden"]:
        console.print(f"[dim]{details['hidden']}.[/]", highlight=False)
    partial = [figure for figure in figures if "unknown" in figure]
    if partial:
        which = "every config" if len(partial) == len(figures) else "some configs"
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
            "than this is impossible (cudasmith.harness.witnesses.roofline)[/]",
            highlight=False,
        )
