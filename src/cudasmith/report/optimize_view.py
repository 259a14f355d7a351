"""`cudasmith optimize` in the terminal: a live panel while the search runs, a summary table at the end."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.text import Text

from cudasmith.exec.base import describe_executor
from cudasmith.harness.baselines import BASELINES
from cudasmith.report.formats import output_console, plain_table
from cudasmith.report.verdict_table import status_markup
from cudasmith.search.state import Snapshot
from cudasmith.store.summary import RunSummary
from cudasmith.wording import plural


def _screened(speedup: float) -> str:
    """A screened speedup, never shown as a time (harness/confirm.py)."""
    return f"screened: {speedup:.2f}x {BASELINES['eager']}, not confirmed"


def _speedups(speedups: dict[str, float]) -> str:
    return ", ".join(f"{value:.2f}x {BASELINES.get(name, name)}" for name, value in speedups.items()) or "–"


def _money(known: float, unpriced: int) -> str:
    if unpriced and not known:
        return "unknown (no price reported or configured: [llm.prices] in cudasmith.toml)"
    return f"US${known:.4f}" + (f" + {plural(unpriced, 'answer')} of unknown price" if unpriced else "")


def render_snapshot(snapshot: Snapshot, title: str) -> Group:
    """The live panel: progress, judge and model activity, the best so far, spend, latency."""
    lines = [
        Text(title, style="bold"),
        Text(
            f"{snapshot.progress} · judged {snapshot.judged} · judging {snapshot.judging} · "
            f"queued {snapshot.queued} · model calls in flight {snapshot.calls_in_flight}"
        ),
    ]
    if snapshot.executor is not None:
        lines.append(Text(f"lanes: {describe_executor(snapshot.executor)}", style="dim"))
    lines.append(Text(_best_text(snapshot)))
    latency = "–" if snapshot.latency_s is None else f"{snapshot.latency_s:.1f} s"
    lines.append(
        Text(
            f"spent US${snapshot.spent_usd:.4f} (priced answers) · model latency (median) {latency} · "
            f"judge idle waiting for answers {snapshot.idle_s:.1f} s",
            style="dim",
        )
    )
    return Group(*lines)


def _best_text(snapshot: Snapshot) -> str:
    top = snapshot.best
    if top is None or top.verdict is None:
        return "best: nothing correct yet"
    sol = top.sol_pct()
    if top.screened_speedup is not None:
        return f"best: candidate {top.id} · {_screened(top.screened_speedup)}"
    return f"best: candidate {top.id} · {_speedups(top.verdict.speedups)}" + (
        f" · {sol:.0f} % of speed of light" if sol is not None else ""
    )


@contextmanager
def live_view(title: str, terminal: bool, console: Console | None = None) -> Iterator[Any]:
    """A callback for the driver's snapshots: a live panel in a terminal, else a line on stderr each
    time a candidate is judged or a round starts (a log of the run, never silent for long)."""
    console = console or Console(stderr=True)
    if not terminal:
        seen: list[tuple[str, int]] = []

        def line(snapshot: Snapshot) -> None:
            where = (snapshot.progress, snapshot.judged)
            if seen and seen[-1] == where:
                return
            seen.append(where)
            console.print(
                Text(f"{title}: {snapshot.progress} · judged {snapshot.judged} · {_best_text(snapshot)}"),
                soft_wrap=True,
            )

        yield line
        return
    with Live(Text(title), console=console, refresh_per_second=4, transient=True) as live:

        def update(snapshot: Snapshot) -> None:
            live.update(render_snapshot(snapshot, title))

        yield update


def print_summary(summary: RunSummary, console: Console | None = None) -> None:
    """The run's outcome: best kernel, candidates per outcome, cost, the judge's time, the verifier."""
    console = console or output_console()
    best = summary.best
    headline = "no correct kernel found"
    if best is not None:
        shown = (
            _speedups(best.speedups) if best.screened_speedup is None else _screened(best.screened_speedup)
        )
        headline = f"best: candidate {best.candidate} · {shown}"
        if best.sol_pct is not None:
            headline += f" · {best.sol_pct:.0f} % of speed of light"
    console.print(f"[bold]{escape(headline)}[/]")
    models = ", ".join(summary.models)
    console.print(escape(f"{summary.task} · {summary.strategy} · {models} · {summary.device}"), style="dim")
    table = plain_table(show_header=False)
    table.add_column(justify="left")
    table.add_column(justify="left")
    counts = summary.counts
    outcomes = ", ".join(f"{status_markup(status)} {count}" for status, count in counts.outcomes.items())
    judge, llm = summary.judge, summary.llm
    rows = [
        ("candidates", f"{counts.candidates} in {plural(counts.rounds, 'round')}: {outcomes}"),
        (
            "judge",
            f"{counts.judged} judged, {counts.cached} from the cache, "
            f"{judge.candidate_s:.1f} s of judging summed over candidates (several at once), "
            f"idle waiting for answers {judge.idle_waiting_s:.1f} s",
        ),
        *([("lanes", describe_executor(summary.executor))] if summary.executor else []),
    ]
    if llm is not None:
        latency = "–" if llm.latency_median_s is None else f"{llm.latency_median_s:.1f} s median"
        rows.append(("model calls", f"{llm.calls} ({llm.failed_calls} failed), latency {latency}"))
    if summary.cost is not None:
        total = summary.cost.total
        rows.append(
            (
                "cost",
                f"{_money(total.cost_usd, total.unpriced_completions)}; {total.input_tokens:,} tokens in, "
                f"{total.output_tokens:,} out",
            )
        )
    rows.append(("stopped", summary.stop_reason or "–"))
    verifier = summary.verifier
    if verifier is not None:

        def share(value: float | None) -> str:
            return "–" if value is None else f"{value:.0%}"

        rows.append(
            (
                "verifier",
                f"{verifier.model}: precision {share(verifier.precision)}, recall {share(verifier.recall)} "
                f"of its 'fail' against the judge ({verifier.reviewed} reviewed; "
                f"{verifier.deferred_unjudged} it failed were never judged)",
            )
        )
    for label, value in rows:
        table.add_row(label, value if label == "candidates" else escape(value))
    console.print(table)
    if summary.best_path:
        console.print(escape(f"best kernel: {summary.best_path}"))
    console.print(escape(f"run {summary.run_id} (resume with --resume {summary.run_id})"), style="dim")
