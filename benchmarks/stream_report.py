"""The report of throughput.py's stream mode (throughput_stream.py): each row as one line when it ends, the
table of every row at the end, the wall-time table of a K=default row, and the rows' agreement."""

from __future__ import annotations

import sys
from typing import Any, Protocol

import stream_figures as figures
from rich.console import Console
from rich.table import Table
from throughput_report import UNJUDGED, WIDE_COLUMNS, Approach, Candidate


class RowLike(Protocol):
    """What the report reads of a row (throughput_stream.Row): its approach; the rest is in the document."""

    approach: Approach


def _fmt(value: float | None, spec: str, unit: str = "") -> str:
    return "–" if value is None else format(value, spec) + unit


def partial_note(judged: int, total: int) -> str | None:
    """What a ratio to KernelBench's rate is worth when its row judged only part of the stream (None: all)."""
    if judged >= total:
        return None
    return (
        f"* KernelBench judged {judged} of the stream's {total} candidates in its share of the budget: its rate "
        "is over those, the sessions' over theirs; the ratio compares different candidates (give --budget-s "
        "more for the same ones)"
    )


def _vs_kernelbench(summary: dict[str, Any], document: dict[str, Any]) -> str:
    """A row's ratio to KernelBench's rate, marked when KernelBench's row judged only part of the stream."""
    return _marked(summary["vs_kernelbench"], summary, document)


def _marked(ratio: float | None, summary: dict[str, Any], document: dict[str, Any]) -> str:
    partial = summary.get("kernelbench_partial") or "kernelbench_partial" in document
    return _fmt(ratio, ".2f", "x") + ("*" if ratio is not None and partial else "")


def steady_line(s: dict[str, Any], document: dict[str, Any]) -> str:
    """The row's steady state and bound, as a clause of its line."""
    steady = s.get("steady") or {}
    text = ""
    if steady.get("per_minute"):
        text = (
            f"; steady state {steady['per_minute']:.1f} per GPU-minute ({_marked(s.get('steady_vs_kernelbench'), s, document)} "
            f"KernelBench's steady state; {steady['judged']} verdicts over {steady['window_s']:.0f} s)"
        )
    bound = s.get("bound")
    if bound and bound.get("per_minute"):
        text += (
            f"; bound {bound['per_minute']:.1f} per GPU-minute ({bound['exclusive_s']:.1f} s of exclusive time in "
            f"{bound['wall_s']:.0f} s): {bound['share']:.0%} of it reached"
            + (f", {s['steady_share']:.0%} in the steady state" if s.get("steady_share") else "")
        )
    return text


def build_line(builds: list[dict[str, Any]]) -> str:
    """The extension builds sent ahead, as a clause of a row's line: their candidates wait for them."""
    if not builds:
        return ""
    each = ", ".join(f"{b['seconds']:.1f} s" + ("" if b["ok"] else " (failed)") for b in builds)
    return f"; extension builds ahead took {each} (sent at the child's start; their candidates wait for them)"


def row_line(row: RowLike, document: dict[str, Any]) -> str:
    """A row as one line, printed as soon as the row is done."""
    s = document["rows"][row.approach.name]
    verdicts = "as expected" if not s["unexpected"] else f"{len(s['unexpected'])} unexpected"
    k = f" (K={s['in_flight']})" if s["in_flight"] is not None and "default" in row.approach.name else ""
    return (
        f"{row.approach.name}{k}: {s['judged']} judged in {s['wall_s']:.0f} s, {_fmt(s['candidates_per_gpu_minute'], '.1f')} "
        f"per GPU-minute ({_vs_kernelbench(s, document)} KernelBench's), GPU busy "
        f"{_fmt(s['busy_fraction'] and s['busy_fraction'] * 100, '.0f', ' %')}, warm median "
        f"{_fmt(s['warm_median_s'], '.2f', ' s')}, verdicts {verdicts}"
        + (
            f", exclusive {s['exclusive_windows']}, {s['retimed_windows']} retimed"
            + ", holds waited {drain_s:.1f} s for steps, {pause_s:.1f} s for pauses, {settle_s:.1f} s to settle".format(
                **s["hold_waits_s"]
            )
            if s["exclusive_windows"]
            else ""
        )
        + steady_line(s, document)
        + config_cost_line(s["config_costs"])
        + build_line(s.get("extension_builds") or [])
        + (
            f"; the child's start took {s['child_start_s']:.1f} s, its exit {_fmt(s['child_exit_s'], '.1f', ' s')}"
            if s.get("child_start_s") is not None
            else ""
        )
        + (f" ({row.approach.note})" if row.approach.note else "")
    )


def config_cost_line(costs: dict[str, Any]) -> str:
    """What timing one config cost (issue 21's target: at most 0.3 s for a config under 1 ms)."""
    if not costs.get("steps"):
        return ""
    parts = ", ".join(
        f"{label} {_fmt(costs.get(key), '.2f', ' s')}"
        for label, key in (("warm-up", "warmup_s"), ("sampling", "sampling_s"), ("records", "records_s"))
    )
    return f"; timing a config took {_fmt(costs['step_s'], '.2f', ' s')} (median of {costs['steps']}; measurement: {parts})"


def disagreements(rows: list[RowLike], batch: list[Candidate]) -> list[str]:
    """Session rows whose verdict on a candidate differs from the first session row's (K = 1's): being in
    flight changed a verdict."""
    sessions = [row for row in rows if "session" in row.approach.name]
    if len(sessions) < 2:
        return []
    first, found = sessions[0].approach.results, []
    first_name = sessions[0].approach.name.rpartition("session ")[2]
    for row in sessions[1:]:
        for candidate in batch:
            one, other = first[candidate.name].status, row.approach.results[candidate.name].status
            if one not in UNJUDGED and other not in UNJUDGED and one != other:
                found.append(f"{row.approach.name}: {candidate.name} {other}, {first_name} said {one}")
    return found


def print_table(rows: list[RowLike], document: dict[str, Any]) -> None:
    out = Console(highlight=False, width=None if sys.stdout.isatty() else WIDE_COLUMNS)
    table = Table(title=f"Stream throughput on {document['versions']['device']}", show_edge=False)
    columns = ("row", "judged", "wall s", "per GPU-min", "vs KernelBench", "steady /GPU-min", "steady vs KB")
    columns += ("bound /GPU-min", "of bound", "GPU busy", "warm median s", "wall s/candidate", "verdicts")
    for column in columns:
        table.add_column(column, justify="left" if column in ("row", "verdicts") else "right")
    for row in rows:
        s = document["rows"][row.approach.name]
        verdicts = "expected" if not s["unexpected"] else f"{len(s['unexpected'])} unexpected"
        busy = s["busy_fraction"] and s["busy_fraction"] * 100
        cells = [row.approach.name, str(s["judged"]), _fmt(s["wall_s"], ".0f")]
        cells += [_fmt(s["candidates_per_gpu_minute"], ".1f"), _vs_kernelbench(s, document)]
        bound = s.get("bound") or {}
        cells += [
            _fmt((s.get("steady") or {}).get("per_minute"), ".1f"),
            _marked(s.get("steady_vs_kernelbench"), s, document),
        ]
        cells += [
            _fmt(bound.get("per_minute"), ".1f"),
            _fmt(bound.get("share") and bound["share"] * 100, ".0f", "%"),
        ]
        cells += [
            _fmt(busy, ".0f", "%"),
            _fmt(s["warm_median_s"], ".2f"),
            _fmt(s["wall_per_candidate_s"], ".2f"),
        ]
        table.add_row(*cells, verdicts)
    out.print(table)
    for line in document["lines"]:
        out.print(line)


STEADY_MEANING = (
    "steady state: the verdicts after every task had its first (which pays for its session's start), over the "
    "time from then to the row's last verdict;"
)
BOUND_MEANING = (
    "bound: the candidates a GPU would judge a minute doing nothing but the row's exclusive windows (every timed "
    "request of its holds: candidates' screens and configs, baselines, peaks); of bound: the share of it reached."
)


def print_wall_table(name: str, s: dict[str, Any]) -> None:
    """Where a row's wall time went (stream_figures.wall_breakdown), and where a config's timing went."""
    out = Console(highlight=False, width=None if sys.stdout.isatty() else WIDE_COLUMNS)
    table = Table(
        title=f"Where {name}'s {s['wall_s']:.0f} s went (each second counted once)", show_edge=False
    )
    parts = s["wall_s_by_phase"]
    for column in figures.WALL_COLUMNS:
        table.add_column(column, justify="right")
    table.add_row(*(f"{parts[c]:.1f} s ({parts[c] / s['wall_s']:.0%})" for c in figures.WALL_COLUMNS))
    out.print(table)
    out.print(
        "start: before the first candidate's import (the child's interpreter and imports, the sessions' workers); "
        "imports: NVRTC builds at import included; correctness: Triton's compile on the first call included; "
        "holds: the device held alone (screens, timing, baselines, re-checks)"
    )
    if s.get("timed_configs"):
        out.print(figures.config_line(s["config_parts"], s["hold_parts"], s["timed_configs"]))
    for task, marks in (s.get("startup") or {}).items():
        out.print(f"{task}'s session start: " + ", ".join(f"{step} {at:.2f} s" for step, at in marks.items()))
