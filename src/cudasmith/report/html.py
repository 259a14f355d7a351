"""The HTML report: one self-contained file (Plotly's JavaScript embedded, nothing fetched at view time)
with the leaderboard, fast_p curves per baseline, speedup per task, the roofline, search progress and
what the judge said, for one run or several side by side."""

from __future__ import annotations

import html
import json
from datetime import datetime, timezone
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from cudasmith.report import figures
from cudasmith.report.leaderboard import LEGEND, leaderboard
from cudasmith.store.rules import RULE_TITLES
from cudasmith.store.runs import RunView

# The page may run its own inline scripts and styles and nothing else: the browser refuses any load from
# the network, so the report views the same offline, and leaks nothing about the runs when opened.
CONTENT_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:"
)
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 0.9rem; }
th, td { padding: 0.3rem 0.6rem; border-bottom: 1px solid #ddd; text-align: right; }
th:first-child, td:first-child { text-align: left; }
figure.plot { margin: 1.5rem 0; min-height: 460px; }
.note { color: #666; font-size: 0.9rem; }
"""


def _table(columns: list[str], rows: list[list[str]]) -> str:
    def cell(text: str) -> str:
        return html.escape(text).replace("\n", "<br>")

    head = "".join(f"<th>{cell(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _figure(name: str, figure: go.Figure) -> str:
    plot = pio.to_html(
        figure,
        include_plotlyjs=False,
        full_html=False,
        div_id=f"plot-{name}",
        default_height=f"{figures.HEIGHT_PX}px",
        config={"displaylogo": False, "responsive": True},
    )
    return f'<figure class="plot" data-plot="{html.escape(name)}">{plot}</figure>'


def _plots(views: list[RunView]) -> tuple[list[tuple[str, go.Figure]], list[str]]:
    """The figures that have data, by name, and a note for each left out."""
    baselines = list(dict.fromkeys(b for v in views for b in v.summary.baselines))
    candidates: list[tuple[str, go.Figure | None, str]] = [
        (f"fast-p-{b}", figures.fast_p_figure(views, b), f"fast_p against {b}: nothing timed")
        for b in baselines
    ]
    candidates += [
        (
            "speedup-per-task",
            figures.speedup_per_task_figure(views),
            "speedup per task: no correct, timed kernel",
        ),
        ("roofline", figures.roofline_figure(views), "roofline: no correct kernel with known work and time"),
        (
            "progress",
            figures.progress_figure(views),
            "search progress: no run searched (one round, no model)",
        ),
        ("status", figures.status_figure(views), ""),
    ]
    shown = [(name, figure) for name, figure, _ in candidates if figure is not None]
    return shown, [why for _, figure, why in candidates if figure is None]


def _claims(views: list[RunView]) -> str:
    rows = [
        [
            view.label,
            str(view.summary.claimed_correct),
            str(view.summary.held_up),
            "; ".join(f"{n} {what}" for what, n in view.summary.claimed_fell.items()) or "–",
        ]
        for view in views
        if view.summary.claimed_correct is not None
    ]
    if not rows:
        return ""
    columns = ["run", "called correct by the other judge", "held up here", "what the others were"]
    return "<h2>Re-judged: do the claimed-correct kernels hold up?</h2>" + _table(columns, rows)


def render_report(views: list[RunView]) -> str:
    """The whole page as one string."""
    plots, left_out = _plots(views)
    runs = "".join(
        f"<li><code>{html.escape(v.run.id)}</code>: {html.escape(v.run.kind)} of {html.escape(v.run.task)}, "
        f"{html.escape(v.label)}, {v.summary.attempts} attempts</li>"
        for v in views
    )
    rules = "".join(
        f"<li><code>{html.escape(r)}</code>: {html.escape(t)}</li>" for r, t in RULE_TITLES.items()
    )
    summaries = json.dumps({v.run.id: v.summary.to_dict() for v in views}).replace("</", "<\\/")
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_POLICY}">',
            "<title>cudasmith report</title>",
            f"<style>{STYLE}</style>",
            f"<script>{get_plotlyjs()}</script>",
            "</head><body>",
            f"<h1>cudasmith report</h1><p class='note'>made {stamp}</p><ul>{runs}</ul>",
            "<h2>Leaderboard</h2>",
            f"<p class='note'>{html.escape(LEGEND)}</p>",
            _table(*leaderboard(views)),
            _claims(views),
            *(_figure(name, figure) for name, figure in plots),
            "".join(f"<p class='note'>Not plotted: {html.escape(why)}.</p>" for why in left_out),
            f"<h2>Rules</h2><ul>{rules}</ul>",
            f'<script type="application/json" id="summaries">{summaries}</script>',
            "</body></html>",
        ]
    )


def write_report(views: list[RunView], path: str | Path) -> Path:
    """Write the page to `path` (its folder is made) and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(views), encoding="utf-8")
    return path
