"""A stored run as reports see it: its attempts (judged candidates), what its model calls cost, and its
summary (cudasmith.store.metrics).

A bench of files spans several tasks, so its candidates carry their task in `meta["task"]` (and the
sample index and another judge's claim beside it); a bench of a model is one search run per task (its
`task-run` events), read together; an `optimize` run is about its run's one task.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from cudasmith.store import CallRecord, CandidateRecord, Run, RunStore, Usage
from cudasmith.store.metrics import Attempt, Cost, Summary, summarize

# How the search marks an exact duplicate it did not judge (cudasmith.search.novelty).
DUPLICATE = re.compile(r"a duplicate of candidate (\d+)")


@dataclass
class RunView:
    """One run's attempts and numbers."""

    run: Run
    attempts: list[Attempt]
    cost: Cost | None
    summary: Summary
    # Candidates without a verdict: not judged yet, and skipped by design (duplicates, near ones).
    unjudged: int
    skipped: int = 0

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


def model_costs(calls: list[CallRecord]) -> dict[str, Usage]:
    """What a run's model calls cost, per model: the one sum every cost of a run is read from."""
    by_model: dict[str, Usage] = {}
    for call in calls:
        entry = by_model.setdefault(call.model, Usage())
        entry.calls += 1
        for completion in call.completions:
            entry.add(completion)
    return by_model


def run_cost(by_model: dict[str, Usage]) -> Cost | None:
    """A run's cost over its models (model_costs); None when no model was called."""
    if not by_model:
        return None
    total = sum(by_model.values(), Usage())
    return Cost(total_usd=total.usd, calls=total.calls, unpriced_calls=total.unpriced_completions)


def _spent_at_completion(calls: list[CallRecord]) -> dict[int, float | None]:
    """The run's spend so far at each answer, in call order; None once an unknown price was met."""
    spent: float | None = 0.0
    at_completion: dict[int, float | None] = {}
    for call in calls:
        for completion in call.completions:
            if completion.cost_usd is None:
                spent = None
            elif spent is not None:
                spent += completion.cost_usd
        for completion in call.completions:
            at_completion[completion.id] = spent
    return at_completion


def _attempt(
    run: Run, candidate: CandidateRecord, verdict: dict[str, Any], spent: dict[int, float | None]
) -> Attempt:
    meta = candidate.meta
    return Attempt(
        task=str(meta.get("task") or verdict.get("task") or run.task),
        verdict=verdict,
        label=candidate.path or candidate.key,
        sample=int(meta.get("sample", 0)),
        round=candidate.round,
        cost_usd=spent.get(candidate.completion_id) if candidate.completion_id is not None else None,
        claimed_correct=meta.get("claimed_correct"),
    )


def task_runs(store: RunStore, bench: Run) -> dict[str, Run]:
    """A bench of a model's search run per task (its `task-run` events); empty for other runs."""
    return {e["data"]["task"]: store.run(e["data"]["run"]) for e in store.events(bench.id, kind="task-run")}


def _verdict(candidate: CandidateRecord, by_id: dict[int, CandidateRecord]) -> dict[str, Any] | None:
    """A candidate's verdict; an exact duplicate the search did not judge again has its original's (the
    same code under the same judge), so that pass@k counts every sample drawn."""
    if candidate.verdict is not None:
        return candidate.verdict
    duplicate = DUPLICATE.fullmatch(candidate.skipped or "")
    original = by_id.get(int(duplicate.group(1))) if duplicate else None
    return None if original is None else original.verdict


def _run_attempts(store: RunStore, run: Run) -> tuple[list[Attempt], list[CallRecord], int, int]:
    """A run's attempts, its model calls, and how many of its candidates have no verdict: not judged yet,
    and skipped by design."""
    candidates = store.candidates(run.id)
    by_id = {c.id: c for c in candidates}
    calls = store.calls(run.id)
    spent = _spent_at_completion(calls)
    attempts = [_attempt(run, c, v, spent) for c in candidates if (v := _verdict(c, by_id)) is not None]
    skipped = sum(c.skipped is not None and _verdict(c, by_id) is None for c in candidates)
    return attempts, calls, len(candidates) - len(attempts) - skipped, skipped


def load_run(store: RunStore, run_id: str) -> RunView:
    """A run's attempts, cost and summary (a bench of a model: those of its searches, one per task); a
    UsageError naming the latest runs when there is none."""
    run = store.run(run_id)
    searches = task_runs(store, run) if run.kind == "bench" else {}
    parts = [_run_attempts(store, r) for r in (searches.values() if searches else [run])]
    attempts = [a for part in parts for a in part[0]]
    cost = run_cost(model_costs([call for part in parts for call in part[1]]))
    unjudged, skipped = sum(part[2] for part in parts), sum(part[3] for part in parts)
    return RunView(run, attempts, cost, summarize(attempts, cost), unjudged, skipped)
