"""Runs side by side: the leaderboard's rows (shared by the terminal and the HTML page), and the Rich
tables `cudasmith bench` and `cudasmith report` print."""

from __future__ import annotations

from rich.console import Console

from cudasmith.harness.baselines import BASELINES
from cudasmith.report.formats import output_console, plain_table, titled
from cudasmith.report.verdict_table import status_markup
from cudasmith.store.metrics import FAST_P
from cudasmith.store.rules import RULE_TITLES
from cudasmith.store.runs import RunView
from cudasmith.store.summary import RunSummary
from cudasmith.wording import plural

# Leaderboards rank runs by this fast_p against eager PyTorch: correct and faster.
RANKING_P = 1.0


def percent(value: float | None) -> str:
    """A share as a percentage, '–' when there is none."""
    return "–" if value is None else f"{100 * value:.1f} %"


def times(value: float | None) -> str:
    """A speedup, '–' when there is none."""
    return "–" if value is None else f"{value:.3g}×"


def dollars(value: float | None, summary: RunSummary) -> str:
    """A cost in US dollars: 'no model' when none was called, 'unknown' when a price was unknown."""
    if summary.cost is None:
        return "no model"
    return "unknown" if value is None else f"${value:.4g}"


def _baselines(views: list[RunView]) -> list[str]:
    return list(dict.fromkeys(b for v in views for b in v.summary.baselines))


def _rank(view: RunView) -> float:
    eager = view.summary.baselines.get("eager")
    return -(eager.fast_p.get(f"fast_{RANKING_P:g}") or 0.0) if eager else 0.0


def leaderboard(views: list[RunView]) -> tuple[list[str], list[list[str]]]:
    """The runs side by side: a header (one column per run, best fast_1 against eager first) and one row
    per figure, its name first. Cells may hold a line break (the HTML page breaks the line too)."""
    ranked = sorted(views, key=_rank)
    header = ["", *(f"{v.made_by}\n{v.run.id}" for v in ranked)]
    summaries = [v.summary for v in ranked]

    def row(name: str, cells: list[str]) -> list[str]:
        return [name, *cells]

    rows = [
        row("device", [v.run.device_name for v in ranked]),
        row("tasks", [str(s.tasks) for s in summaries]),
        row("kernels with a verdict", [str(s.attempts) for s in summaries]),
        row("correct", [f"{s.correct} ({percent(s.correctness_rate)})" for s in summaries]),
    ]
    for baseline in _baselines(views):
        figures = [s.baselines.get(baseline) for s in summaries]
        for p in FAST_P[1:]:
            key = f"fast_{p:g}"
            rows.append(
                row(f"{key} vs {baseline}", [percent(f.fast_p.get(key)) if f else "–" for f in figures])
            )
        rows.append(row(f"geomean vs {baseline}", [times(f.geomean_speedup if f else None) for f in figures]))
        rows.append(row(f"median vs {baseline}", [times(f.median_speedup if f else None) for f in figures]))
    for k in sorted({k for s in summaries for k in s.pass_at_k}, key=lambda k: int(k.split("@")[1])):
        rows.append(row(k, [percent(s.pass_at_k.get(k)) for s in summaries]))
    rows += [
        row(
            "median % SOL",
            ["–" if s.median_sol_pct is None else f"{s.median_sol_pct:.3g} %" for s in summaries],
        ),
        row("USD per correct kernel", [dollars(s.cost_per_correct_usd, s) for s in summaries]),
        row("USD per task", [dollars(s.cost_per_task_usd, s) for s in summaries]),
    ]
    return header, rows


# How the legend names each baseline (BASELINES calls the task's EXPERT just "expert").
BASELINE_TITLES = {**BASELINES, "expert": "the task's EXPERT implementation"}
BASELINE_LEGEND = "; ".join(f"{name} = {title}" for name, title in BASELINE_TITLES.items())
LEGEND = (
    "fast_p: share of all kernels with a verdict that are correct and more than p× faster than the baseline "
    "(fast_0 is the share correct); speedups: geometric mean over a kernel's configs, baseline time over "
    "kernel time, timed side by side on the device named, over correct kernels; pass@k: unbiased "
    f"estimator, mean over tasks; % SOL: of the device's measured peaks. Baselines: {BASELINE_LEGEND}."
)


def print_leaderboard(views: list[RunView], console: Console | None = None) -> None:
    """The runs side by side, with what their numbers mean."""
    console = console or output_console()
    header, rows = leaderboard(views)
    table = plain_table()
    table.add_column(header[0])
    for name in header[1:]:
        table.add_column(name, justify="right", overflow="fold")
    for row in rows:
        table.add_row(*row)
    console.print(titled("Leaderboard, best fast_1 against eager PyTorch first", table))
    console.print(f"[dim]{LEGEND}[/]", highlight=False)


def print_run_details(view: RunView, console: Console | None = None) -> None:
    """One run's verdicts per status, rejections per rule, pass@k and, for a re-judged run, the claims."""
    console = console or output_console()
    summary = view.summary
    counts = summary.counts
    outcomes = ", ".join(f"{status_markup(s)} {n}" for s, n in counts.outcomes.items())
    candidates, tasks = plural(counts.candidates, "candidate"), plural(summary.tasks, "task")
    console.print(f"[bold]{view.run.id}[/]: {candidates} on {tasks}: {outcomes}")
    console.print(f"  {counts.judged} judged, {counts.cached} from the cache", highlight=False)
    for rule, count in summary.rules.items():
        console.print(f"  rejected {count}× for {rule}: {RULE_TITLES.get(rule, 'a rule not named here')}")
    if summary.noisy_timing:
        noisy = plural(summary.noisy_timing, "correct kernel")
        console.print(
            f"  {noisy} timed noisily (stopped before the noise target): see their speedups' ranges"
        )
    if summary.screened:
        screened = plural(summary.screened, "correct kernel")
        console.print(
            f"  {screened} screened by the search and not confirmed: no time, in no speedup or fast_p"
        )
    if summary.not_isolated:
        console.print(f"  [yellow]{summary.not_isolated} judged with the filesystem not isolated[/]")
    if tampered := summary.statuses.get("tampered"):
        console.print(
            f"  [red]{tampered} stored verdicts fail their MAC (tampered): not trusted, not reused[/]"
        )
    if summary.pass_at_k:
        console.print("  " + ", ".join(f"{k} {percent(v)}" for k, v in summary.pass_at_k.items()))
    if summary.claimed_correct is not None:
        console.print(
            f"  the other judge called {summary.claimed_correct} correct; {summary.held_up} held up here"
            + "".join(f"; {n} {what}" for what, n in summary.claimed_fell.items())
        )
    if summary.cost is not None and summary.cost.total.unpriced_completions:
        unpriced = plural(summary.cost.total.unpriced_completions, "answer")
        console.print(f"  [dim]{unpriced} had no known price: cost unknown[/]")
    if counts.skipped:
        console.print(
            f"  [dim]{plural(counts.skipped, 'candidate')} skipped by design: (near) duplicates of earlier ones[/]"
        )
    if counts.unjudged:
        console.print(f"  [dim]{plural(counts.unjudged, 'candidate')} not judged yet[/]")
