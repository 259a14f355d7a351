"""The candidates of `cudasmith ask` as a table in the terminal."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from cudasmith.report.formats import output_console, plain_table
from cudasmith.report.verdict_table import status_markup
from cudasmith.search.ask import AskResult
from cudasmith.wording import plural

# Reasons longer than this are cut in the table (the full one is in the run directory).
REASON_CHARS = 160


def _tokens(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def _cost(result: AskResult) -> str:
    usage = result.usage
    if usage.unpriced_completions and not usage.cost_usd:
        return "cost unknown (no price reported or configured: [llm.prices] in cudasmith.toml)"
    known = f"US${usage.cost_usd:.4f}"
    return known + (
        f" + {plural(usage.unpriced_completions, 'answer')} of unknown price"
        if usage.unpriced_completions
        else ""
    )


def print_ask(result: AskResult, console: Console | None = None) -> None:
    """One row per candidate, then what the request cost and where everything is kept."""
    console = console or output_console()
    table = plain_table()
    for column in ("#", "status", "speedup", "tokens", "finish"):
        table.add_column(
            column, no_wrap=True, justify="right" if column in {"#", "speedup", "tokens"} else "left"
        )
    table.add_column("reason", ratio=1, overflow="fold")
    for candidate in result.candidates:
        verdict = candidate.verdict
        # A repeat of an earlier answer is skipped, as optimize skips it: its reason says of which.
        said = verdict.reason if verdict is not None else candidate.skipped or "not judged"
        reason = said if len(said) <= REASON_CHARS else said[: REASON_CHARS - 1] + "…"
        speedup = None if verdict is None else verdict.speedup
        table.add_row(
            str(candidate.candidate),
            status_markup(verdict.status if verdict is not None else "skipped"),
            "–" if speedup is None else f"{speedup:.2f}x",
            _tokens(candidate.completion.output_tokens),
            escape(candidate.completion.finish_reason),
            escape(reason),
        )
    correct = sum(c.correct for c in result.candidates)
    best = result.best
    headline = f"{correct} of {len(result.candidates)} correct"
    if skipped := sum(c.skipped is not None for c in result.candidates):
        headline += f" ({skipped} skipped as repeats of earlier answers)"
    if best is not None and best.verdict is not None and best.verdict.speedup:
        headline += (
            f"; best: candidate {best.candidate} at {best.verdict.speedup:.2f}x {best.verdict.baseline}"
        )
    console.print(f"[bold]{escape(headline)}[/]")
    device = next((c.verdict.device for c in result.candidates if c.verdict is not None), result.device)
    # Plain text (escaped): model names, paths and reasons may hold brackets or colons.
    console.print(escape(f"{result.task} · {result.model} · {device} · {result.wall_s:.1f} s"), style="dim")
    console.print(table)
    usage = result.usage
    console.print(
        escape(
            f"{plural(usage.completions, 'answer')} in {plural(usage.calls, 'call')} · "
            f"{usage.input_tokens:,} tokens in, "
            f"{usage.output_tokens:,} out · {_cost(result)}"
        ),
        style="dim",
    )
    for error in result.errors:
        console.print(f"[yellow]a call failed:[/] {escape(error)}")
    console.print(
        escape(f"kept in {result.run_dir}/ (replay with --model replay:{result.run_dir})"), style="dim"
    )
