"""A stored run as reports see it: its attempts (judged candidates), what its model calls cost, and its
summary (cudasmith.report.metrics).

A bench spans several tasks, so its candidates carry their task in `meta["task"]` (and the sample index
and another judge's claim beside it); an `optimize` or `ask` run is about its run's one task.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cudasmith.report.metrics import Attempt, Cost, Summary, summarize
from cudasmith.store import CallRecord, CandidateRecord, Run, RunStore


@dataclass
class RunView:
    """One run's attempts and numbers."""

    run: Run
    attempts: list[Attempt]
    cost: Cost | None
    summary: Summary
    unjudged: int

    @property
    def made_by(self) -> str:
        """What made the kernels: the models and strategy, or solution files."""
        if not self.run.models:
            return "solution files"
        strategy = f" · {self.run.strategy}" if self.run.strategy else ""
        return ", ".join(self.run.models) + strategy

    @property
    def label(self) -> str:
        """How plots name the run: what made the kernels, and the run's id."""
        return f"{self.made_by} · {self.run.id}"

    @property
    def peaks(self) -> list[dict[str, Any]]:
        """The device peaks the run's verdicts were measured against, one per device."""
        found: dict[str, dict[str, Any]] = {}
        for attempt in self.attempts:
            peaks = attempt.verdict.get("peaks")
            if isinstance(peaks, dict) and peaks.get("device"):
                found.setdefault(str(peaks["device"]), peaks)
        return list(found.values())


def _cumulative_cost(calls: list[CallRecord]) -> tuple[dict[int, float | None], Cost | None]:
    """Spend so far at each completion (None once an unknown price was met) and the run's cost."""
    if not calls:
        return {}, None
    spent: float | None = 0.0
    at_completion: dict[int, float | None] = {}
    unpriced = 0
    for call in calls:
        for completion in call.completions:
            if completion.cost_usd is None:
                unpriced += 1
                spent = None
            elif spent is not None:
                spent += completion.cost_usd
        for completion in call.completions:
            at_completion[completion.id] = spent
    return at_completion, Cost(total_usd=spent, calls=len(calls), unpriced_calls=unpriced)


def _attempt(run: Run, candidate: CandidateRecord, spent: dict[int, float | None]) -> Attempt:
    assert candidate.verdict is not None
    meta = candidate.meta
    return Attempt(
        task=str(meta.get("task") or candidate.verdict.get("task") or run.task),
        verdict=candidate.verdict,
        label=candidate.path or candidate.key,
        sample=int(meta.get("sample", 0)),
        round=candidate.round,
        cost_usd=spent.get(candidate.completion_id) if candidate.completion_id is not None else None,
        claimed_correct=meta.get("claimed_correct"),
    )


def load_run(store: RunStore, run_id: str) -> RunView:
    """A run's attempts, cost and summary; a UsageError naming the latest runs when there is none."""
    run = store.run(run_id)
    candidates = store.candidates(run.id)
    spent, cost = _cumulative_cost(store.calls(run.id))
    attempts = [_attempt(run, c, spent) for c in candidates if c.verdict is not None]
    return RunView(run, attempts, cost, summarize(attempts, cost), len(candidates) - len(attempts))
