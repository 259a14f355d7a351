"""A stored run as reports see it: its attempts (candidates with a verdict) and its summary
(cudasmith.store.summary).

A bench of files spans several tasks, so its candidates carry their task in `meta["task"]` (and the
sample index and another judge's claim beside it); a bench of a model is one search run per task (its
`task-run` events), read together; an `optimize` run is about its run's one task.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from cudasmith.device import DevicePeaks
from cudasmith.store.db import RunStore
from cudasmith.store.metrics import Attempt
from cudasmith.store.records import CallRecord, CandidateRecord, Run, VerdictRecord
from cudasmith.store.summary import Cost, RunCounts, RunSummary, about_run, summarize, verifier_agreement


@dataclass
class RunView:
    """One run's attempts and summary."""

    run: Run
    attempts: list[Attempt]
    summary: RunSummary

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
    def peaks(self) -> list[DevicePeaks]:
        """The device peaks the run's verdicts were measured against, one per device."""
        found: dict[str, DevicePeaks] = {}
        for attempt in self.attempts:
            peaks = attempt.verdict.peaks if attempt.verdict else None
            if peaks is not None and peaks.device:
                found.setdefault(peaks.device, peaks)
        return list(found.values())


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


def _attempt(run: Run, candidate: CandidateRecord, spent: dict[int, float | None]) -> Attempt:
    meta = candidate.meta
    verdict = candidate.verdict
    return Attempt(
        task=str(meta.get("task") or (verdict.task if verdict else "") or run.task),
        verdict=verdict,
        label=candidate.path or candidate.key,
        sample=int(meta.get("sample", 0)),
        round=candidate.round,
        cost_usd=spent.get(candidate.completion_id) if candidate.completion_id is not None else None,
        claimed_correct=meta.get("claimed_correct"),
        candidate=candidate.id,
        model=meta.get("model"),
    )


def task_runs(store: RunStore, bench: Run) -> dict[str, Run]:
    """A bench of a model's search run per task (its `task-run` events); empty for other runs."""
    return {e.data["task"]: store.run(e.data["run"]) for e in store.events(bench.id, kind="task-run")}


@dataclass
class _Part:
    """What one run (or one search of a bench) holds."""

    attempts: list[Attempt]
    counts: RunCounts
    calls: list[CallRecord]
    verdicts: list[VerdictRecord]
    candidates: list[CandidateRecord]


def _part(store: RunStore, run: Run) -> _Part:
    candidates = store.candidates(run.id)
    calls = store.calls(run.id)
    spent = _spent_at_completion(calls)
    attempts = [_attempt(run, c, spent) for c in candidates if c.status is not None]
    return _Part(attempts, RunCounts.of(candidates), calls, store.verdicts(run.id), candidates)


def load_run(store: RunStore, run_id: str) -> RunView:
    """A run's attempts and summary (a bench of a model: those of its searches, one per task); a
    UsageError naming the latest runs when there is none."""
    run = store.run(run_id)
    searches = task_runs(store, run) if run.kind == "bench" else {}
    parts = [_part(store, r) for r in (searches.values() if searches else [run])]
    attempts = [a for part in parts for a in part.attempts]
    counts = sum((part.counts for part in parts), RunCounts())
    calls = [call for part in parts for call in part.calls]
    summary = summarize(attempts, counts)
    cost = Cost.of(calls, summary.correct, summary.tasks)
    verifier = verifier_agreement([c for part in parts for c in part.candidates])
    verdicts = [v for part in parts for v in part.verdicts]
    return RunView(run, attempts, about_run(replace(summary, cost=cost), run, calls, verdicts, verifier))
