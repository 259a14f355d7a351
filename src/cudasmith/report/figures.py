"""The report's plots, as Plotly figures built from runs (cudasmith.store.runs.RunView).

Each function returns a figure, or None when no run has what it plots (a bench of files has no search
progress; a CPU run timed against eager only has no torch.compile curve).
"""

from __future__ import annotations

import math
import textwrap
from typing import Any, TypedDict

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from cudasmith.harness.baselines import BASELINES
from cudasmith.harness.verdict import geometric_mean
from cudasmith.harness.wire.status import STATUSES
from cudasmith.store.metrics import fast_p_curve, speedup_of
from cudasmith.store.rules import RULE_TITLES
from cudasmith.store.runs import RunView

STATUS_COLOURS = {
    "correct": "#2ca02c",
    "incorrect": "#d62728",
    "rejected": "#9467bd",
    "compile_error": "#ff7f0e",
    "runtime_error": "#e6b800",
    "timeout": "#8c564b",
}
HEIGHT_PX = 460
# Log axes of speedups are labelled at 1, 2 and 5 times powers of ten (0.1, 0.2, 0.5, 1, 2, 5, 10…), and
# reach this factor beyond the data (and 1×) on either side.
LOG_TICK_STEPS = (1, 2, 5)
LOG_MARGIN = 1.5
# Characters per line of a note written on a plot.
NOTE_CHARS = 100
# Said on the roofline when a point is above a memory roof: its time is real, its bytes came from a cache.
ABOVE_THE_ROOF = (
    "Points above a memory roof read their data from a cache (L2 or on chip) rather than from DRAM: "
    "the roof is DRAM bandwidth, and small inputs stay in cache between calls of a warm baseline."
)


def _layout(figure: go.Figure, title: str, **axes: Any) -> go.Figure:
    figure.update_layout(
        title=title, height=HEIGHT_PX, template="plotly_white", legend={"orientation": "h", "y": -0.2}, **axes
    )
    return figure


class LogAxis(TypedDict):
    """A Plotly log axis with its range and labelled ticks."""

    title: str
    type: str
    range: list[float]
    tickvals: list[float]
    ticktext: list[str]


def speedup_axis(values: list[float], title: str) -> LogAxis:
    """A log axis for speedups: fitted to the values and to 1× (the baseline's own speed), labelled
    0.1, 0.2, 0.5, 1, 2, 5… rather than Plotly's bare mantissas (9 8 … 2 below 1)."""
    positive = [v for v in values if v > 0] or [1.0]
    low, high = min(*positive, 1.0) / LOG_MARGIN, max(*positive, 1.0) * LOG_MARGIN
    ticks = [
        step * 10.0**power
        for power in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
        for step in LOG_TICK_STEPS
        if low <= step * 10.0**power <= high
    ]
    return {
        "title": title,
        "type": "log",
        "range": [math.log10(low), math.log10(high)],
        "tickvals": ticks,
        "ticktext": [f"{tick:g}×" for tick in ticks],
    }


def fast_p_figure(views: list[RunView], baseline: str) -> go.Figure | None:
    """fast_p against one baseline as a function of p, one step curve per run."""
    figure = go.Figure()
    for view in views:
        if not any(speedup_of(a.verdict, baseline) is not None for a in view.attempts):
            continue
        thresholds, values = fast_p_curve(view.attempts, baseline)
        figure.add_scatter(x=thresholds, y=values, mode="lines+markers", line_shape="hv", name=view.label)
    if not figure.data:
        return None
    for p in (1.0, 1.5, 2.0):
        figure.add_vline(x=p, line_dash="dot", line_color="grey", annotation_text=f"p={p:g}")
    name = BASELINES.get(baseline, baseline)
    return _layout(
        figure,
        f"fast_p against {name}: share of all attempts correct and more than p× faster",
        xaxis_title=f"p (speedup over {name}, geometric mean over configs)",
        yaxis={"title": "fast_p (share of attempts)", "range": [0, 1.02], "tickformat": ".0%"},
    )


def speedup_per_task_figure(views: list[RunView]) -> go.Figure | None:
    """Every correct kernel's speedup over eager PyTorch, per task, on a log scale."""
    figure = go.Figure()
    plotted: list[float] = []
    for view in views:
        points = [(a.task, s, a.label) for a in view.attempts if (s := speedup_of(a.verdict)) is not None]
        if points:
            tasks, speedups, labels = zip(*points, strict=True)
            plotted += speedups
            figure.add_scatter(
                x=tasks,
                y=speedups,
                text=labels,
                mode="markers",
                name=view.label,
                marker={"size": 10},
                hovertemplate="%{x}<br>%{y:.3g}× eager<br>%{text}<extra></extra>",
            )
    if not figure.data:
        return None
    figure.add_hline(y=1.0, line_dash="dash", line_color="grey", annotation_text="as fast as eager")
    device = ", ".join(
        sorted({a.verdict.device for v in views for a in v.attempts if a.verdict and a.correct})
    )
    return _layout(
        figure,
        f"Speedup per task over eager PyTorch ({device})",
        yaxis=speedup_axis(plotted, "speedup (geometric mean over configs)"),
        xaxis={"title": "task", "type": "category"},
    )


def _roofline_points(views: list[RunView]) -> dict[str, list[tuple[float, float, str]]]:
    """(arithmetic intensity FLOP/B, achieved GFLOP/s, hover text) of candidates and baselines per series."""
    series: dict[str, list[tuple[float, float, str]]] = {}
    seen: set[tuple[str, str, int, str]] = set()
    for view in views:
        for attempt in view.attempts:
            verdict = attempt.verdict
            if verdict is None or not attempt.correct:
                continue
            for config in verdict.configs:
                roof = config.roofline
                flops, moved = (roof.flops, roof.bytes) if roof is not None else (0.0, 0.0)
                if flops <= 0 or moved <= 0:
                    continue
                times = [(f"candidates · {view.label}", config.time_ms, attempt.label)]
                for name, timed in config.baselines.items():
                    if (verdict.device, attempt.task, config.index, name) not in seen:
                        seen.add((verdict.device, attempt.task, config.index, name))
                        times.append((BASELINES.get(name, name), timed.time_ms, name))
                for series_name, time_ms, who in times:
                    if isinstance(time_ms, int | float) and time_ms > 0:
                        text = f"{attempt.task} config {config.index}<br>{who}<br>{time_ms:.4g} ms"
                        series.setdefault(series_name, []).append(
                            (flops / moved, flops / time_ms / 1e6, text)
                        )
    return series


def roofline_figure(views: list[RunView]) -> go.Figure | None:
    """Arithmetic intensity against achieved throughput, candidates and baselines, under the roofs of
    each device's measured peaks (memory bandwidth, and the best FLOP rate measured)."""
    series = _roofline_points(views)
    if not series:
        return None
    figure = go.Figure()
    for name, points in series.items():
        x, y, text = zip(*points, strict=True)
        figure.add_scatter(
            x=x,
            y=y,
            text=text,
            mode="markers",
            name=name,
            hovertemplate="%{text}<extra></extra>",
            marker={"size": 9, "symbol": "circle" if name.startswith("candidates") else "diamond-open"},
        )
    points = [p for points in series.values() for p in points]
    intensities = [p[0] for p in points]
    low, high = min(intensities) / 4, max(intensities) * 4
    above_a_roof = False
    for peaks in {p.device: p for v in views for p in v.peaks}.values():
        bandwidth, compute = peaks.memory_gb_per_s, 1e3 * peaks.max_tflops()
        if bandwidth <= 0 or compute <= 0:
            continue
        above_a_roof |= any(gflops > intensity * bandwidth for intensity, gflops, _ in points)
        ridge = compute / bandwidth
        xs = [low, *([ridge] if low < ridge < high else []), high]
        figure.add_scatter(
            x=xs,
            y=[min(compute, x * bandwidth) for x in xs],
            mode="lines",
            line={"dash": "dash"},
            name=f"roof of {peaks.device}: {bandwidth:.0f} GB/s, {compute / 1e3:.3g} TFLOP/s (measured)",
        )
    if above_a_roof:
        note = "<br>".join(textwrap.wrap(ABOVE_THE_ROOF, NOTE_CHARS))
        figure.add_annotation(
            text=note, xref="paper", yref="paper", x=0, y=1.0, showarrow=False, align="left"
        )
    return _layout(
        figure,
        "Roofline: achieved throughput against arithmetic intensity (correct kernels' configs)",
        xaxis={"title": "arithmetic intensity (FLOP / byte moved)", "type": "log"},
        yaxis={"title": "achieved GFLOP/s", "type": "log"},
    )


def _progress(view: RunView) -> list[tuple[int, float | None, float]]:
    """(round, spend so far in USD, geometric mean over the run's tasks of the best speedup so far),
    after each attempt in the order made; a task with no correct kernel yet counts as 1× (eager)."""
    best: dict[str, float] = {}
    tasks = sorted({a.task for a in view.attempts})
    steps = []
    for attempt in sorted(view.attempts, key=lambda a: a.round or 0):
        if (s := speedup_of(attempt.verdict)) is not None:
            best[attempt.task] = max(best.get(attempt.task, 0.0), s)
        overall = geometric_mean([best.get(t, 1.0) for t in tasks]) or 1.0
        steps.append((attempt.round or 0, attempt.cost_usd, overall))
    return steps


def progress_figure(views: list[RunView]) -> go.Figure | None:
    """The search's best so far by round and by spend, for runs that searched (rounds or model cost)."""
    searched = [v for v in views if len({a.round for a in v.attempts}) > 1 or v.summary.cost is not None]
    if not searched:
        return None
    figure = make_subplots(rows=1, cols=2, subplot_titles=["by round", "by cost"], shared_yaxes=True)
    for index, view in enumerate(searched):
        steps = _progress(view)
        colour = f"hsl({(index * 67) % 360}, 60%, 45%)"
        per_round: dict[int, float] = {}
        for round_, _, value in steps:
            per_round[round_] = value
        figure.add_scatter(
            x=list(per_round),
            y=list(per_round.values()),
            mode="lines+markers",
            name=view.label,
            line={"color": colour},
            row=1,
            col=1,
        )
        priced = [(cost, value) for _, cost, value in steps if cost is not None]
        if priced:
            figure.add_scatter(
                x=[c for c, _ in priced],
                y=[v for _, v in priced],
                mode="lines",
                line_shape="hv",
                name=f"{view.label} (by cost)",
                line={"color": colour},
                showlegend=False,
                row=1,
                col=2,
            )
    figure.update_xaxes(title_text="round", row=1, col=1)
    figure.update_xaxes(title_text="model spend so far (USD)", row=1, col=2)
    values = [value for view in searched for _, _, value in _progress(view)]
    axis = speedup_axis(values, "best speedup over eager, geometric mean over tasks")
    figure.update_yaxes(dict(axis), row=1, col=1)
    figure.update_yaxes({**axis, "title": None}, row=1, col=2)
    return _layout(figure, "Search progress: best correct kernel so far (tasks without one count as 1×)")


def status_figure(views: list[RunView]) -> go.Figure:
    """Verdicts per status for each run, and rejections per rule broken (or one line: none)."""
    rules = sorted({r for v in views for r in v.summary.rules})
    titles = ["verdicts per status", "rejections per rule"] if rules else ["verdicts per status"]
    figure = make_subplots(rows=1, cols=len(titles), subplot_titles=titles)
    labels = [v.label for v in views]
    for status in (*STATUSES, *sorted({s for v in views for s in v.summary.statuses} - set(STATUSES))):
        counts = [v.summary.statuses.get(status, 0) for v in views]
        if any(counts):
            figure.add_bar(
                y=labels,
                x=counts,
                orientation="h",
                name=status,
                row=1,
                col=1,
                marker_color=STATUS_COLOURS.get(status, "#7f7f7f"),
            )
    figure.update_xaxes(title_text="attempts", row=1, col=1)
    for view in views if rules else []:
        figure.add_bar(
            x=[view.summary.rules.get(r, 0) for r in rules],
            y=rules,
            orientation="h",
            row=1,
            col=2,
            name=f"{view.label} (rules)",
            showlegend=False,
            hovertext=[RULE_TITLES.get(r, r) for r in rules],
        )
    if rules:
        figure.update_xaxes(title_text="rejected attempts", row=1, col=2)
    else:
        figure.add_annotation(text="no rejections", xref="paper", yref="paper", x=1, y=1.08, showarrow=False)
    figure.update_layout(barmode="stack")
    return _layout(figure, "What the judge said")
