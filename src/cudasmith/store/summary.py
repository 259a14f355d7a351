"""A run's summary: the one set of numbers that `optimize`, `bench` and `report` print, on the screen and
as JSON, and that the run's row keeps when it ends.

Its counts come from one place (`RunCounts.of`): each candidate of the run is exactly one of judged (by
the judge, in this run), cached (a verdict reused from the evaluation cache), an answer with no code (a
verdict without judging), skipped (a repeat of another candidate: never judged, no verdict, no attempt)
or not judged yet. The benchmark's figures are over the attempts (metrics.py); the cost over the run's
model calls; what only the process that ran the search knew (how long the judge waited for answers, the
best kernel's file, the model errors, the executor's statistics) is read back from the run's row.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace

from cudasmith.exec import ExecutorStats
from cudasmith.harness.wire.status import STATUSES
from cudasmith.jsontypes import JsonDict
from cudasmith.store.metrics import (
    Attempt,
    BaselineFigures,
    baseline_figures,
    baselines_timed,
    fastest_first,
    fell_to,
    filesystem_not_isolated,
    mean_pass_at_k,
    median_sol_pct,
    noisy_timing,
    pass_ks,
    rules_broken,
    screened_only,
    screened_speedup_of,
    sol_pct_of,
    speedup_of,
)
from cudasmith.store.records import CallRecord, CandidateRecord, Run, Usage, VerdictRecord

# The outcomes of a candidate that got no verdict, as the counts name them.
SKIPPED = "skipped"
UNJUDGED = "unjudged"


@dataclass
class RunCounts:
    """What became of a run's candidates (a bench of a model: of its searches' candidates)."""

    candidates: int = 0
    # Candidates with a verdict (the attempts), per status; "tampered" for rows that fail their MAC.
    statuses: dict[str, int] = field(default_factory=dict)
    # Verdicts the judge gave in the run, and verdicts reused from the evaluation cache.
    judged: int = 0
    cached: int = 0
    # Repeats of other candidates the search did not judge, and candidates not judged yet.
    skipped: int = 0
    unjudged: int = 0
    rounds: int = 0

    @classmethod
    def of(cls, candidates: Iterable[CandidateRecord]) -> RunCounts:
        """The counts of a run's candidates."""
        counts = cls()
        statuses: Counter[str] = Counter()
        for candidate in candidates:
            counts.candidates += 1
            counts.rounds = max(counts.rounds, candidate.round + 1)
            if candidate.status is not None:
                statuses[candidate.status] += 1
                counts.cached += candidate.verdict_cached
                # An answer with no code gets its verdict without the judge.
                counts.judged += not candidate.verdict_cached and candidate.source is not None
            elif candidate.skipped is not None:
                counts.skipped += 1
            else:
                counts.unjudged += 1
        counts.statuses = _in_order(statuses)
        return counts

    @property
    def attempts(self) -> int:
        """Candidates with a verdict."""
        return sum(self.statuses.values())

    @property
    def outcomes(self) -> dict[str, int]:
        """Every candidate once: the statuses, then skipped and not judged yet (where any)."""
        extra = {SKIPPED: self.skipped, UNJUDGED: self.unjudged}
        return {**self.statuses, **{name: n for name, n in extra.items() if n}}

    def __add__(self, other: RunCounts) -> RunCounts:
        """The counts of two runs as one (a bench of a model over its searches)."""
        statuses = Counter(self.statuses) + Counter(other.statuses)
        return RunCounts(
            candidates=self.candidates + other.candidates,
            statuses=_in_order(statuses),
            judged=self.judged + other.judged,
            cached=self.cached + other.cached,
            skipped=self.skipped + other.skipped,
            unjudged=self.unjudged + other.unjudged,
            rounds=max(self.rounds, other.rounds),
        )


def _in_order(statuses: Counter[str]) -> dict[str, int]:
    """Statuses in the verdict's order, then any other (tampered, one a newer cudasmith wrote) by name."""
    order = (*STATUSES, *sorted(set(statuses) - set(STATUSES)))
    return {status: statuses[status] for status in order if statuses[status]}


@dataclass
class Cost:
    """What a run's model calls cost, per model and in all: dollars (None while any answer's price is
    unknown, never counted as 0), tokens, and dollars per correct kernel and per task."""

    by_model: dict[str, Usage]
    per_correct_usd: float | None = None
    per_task_usd: float | None = None

    @property
    def total(self) -> Usage:
        """The tally over every model."""
        return sum(self.by_model.values(), Usage())

    @classmethod
    def of(cls, calls: list[CallRecord], correct: int = 0, tasks: int = 0) -> Cost | None:
        """The cost of a run's calls; None when no model was called."""
        by_model: dict[str, Usage] = {}
        for call in calls:
            entry = by_model.setdefault(call.model, Usage())
            entry.calls += 1
            for completion in call.completions:
                entry.add(completion)
        if not by_model:
            return None
        usd = sum(by_model.values(), Usage()).usd
        return cls(
            by_model,
            per_correct_usd=usd / correct if usd is not None and correct else None,
            per_task_usd=usd / tasks if usd is not None and tasks else None,
        )

    def to_dict(self) -> JsonDict:
        """The JSON form: the totals, per correct kernel and per task, and per model."""
        return {
            **self.total.to_dict(),
            "per_correct_usd": self.per_correct_usd,
            "per_task_usd": self.per_task_usd,
            "by_model": {model: usage.to_dict() for model, usage in self.by_model.items()},
        }


@dataclass
class CallStats:
    """The run's model calls: how many, how many failed for good, and how long answers took."""

    calls: int
    failed_calls: int
    latency_median_s: float | None
    latency_max_s: float | None

    @classmethod
    def of(cls, calls: list[CallRecord]) -> CallStats:
        """The statistics of a run's calls."""
        latencies = [c.latency_s for call in calls for c in call.completions if c.latency_s is not None]
        return cls(
            calls=len(calls),
            failed_calls=sum(c.status == "failed" for c in calls),
            latency_median_s=statistics.median(latencies) if latencies else None,
            latency_max_s=max(latencies, default=None),
        )


@dataclass
class JudgeTime:
    """Seconds the judge spent on the run's verdicts, and seconds it sat idle waiting for answers."""

    # Each verdict's judging time, summed: a lane judges several candidates at once, so this exceeds the
    # wall time (`executor.wall_s`) by about the candidates in flight.
    candidate_s: float = 0.0
    idle_waiting_s: float = 0.0


@dataclass
class BestKernel:
    """The fastest correct kernel of a run about one task: its candidate, where it was made, and its
    speedups and % of speed of light."""

    candidate: int | None
    round: int | None
    model: str | None
    # Over eager PyTorch (metrics.speedup_of), and over each baseline timed.
    speedup: float | None
    speedups: dict[str, float]
    sol_pct: float | None
    # Set only where the best was screened and not confirmed: no time, never a speedup.
    screened_speedup: float | None = None


@dataclass
class VerifierAgreement:
    """How often the LLM verifier's "fail" agreed with the judge: flagging a failure is a positive, so
    precision is the share of its "fail"s the judge also failed, and recall the share of the judge's
    failures it flagged; with the counts behind them."""

    model: str | None
    reviewed: int
    unclear: int
    precision: float | None
    recall: float | None
    flagged_and_failed: int
    flagged_but_correct: int
    passed_but_failed: int
    passed_and_correct: int
    # Candidates it failed that were never judged.
    deferred_unjudged: int = 0

    @classmethod
    def of(cls, model: str | None, pairs: list[tuple[str, str]], deferred: int = 0) -> VerifierAgreement:
        """The agreement over (opinion, status) pairs of candidates both looked at."""
        decided = [(opinion, status) for opinion, status in pairs if opinion in ("pass", "fail")]
        flagged_failed = sum(o == "fail" and s != "correct" for o, s in decided)
        flagged_correct = sum(o == "fail" and s == "correct" for o, s in decided)
        passed_failed = sum(o == "pass" and s != "correct" for o, s in decided)
        flagged = flagged_failed + flagged_correct
        failed = flagged_failed + passed_failed
        return cls(
            model=model,
            reviewed=len(pairs),
            unclear=len(pairs) - len(decided),
            precision=flagged_failed / flagged if flagged else None,
            recall=flagged_failed / failed if failed else None,
            flagged_and_failed=flagged_failed,
            flagged_but_correct=flagged_correct,
            passed_but_failed=passed_failed,
            passed_and_correct=len(decided) - flagged - passed_failed,
            deferred_unjudged=deferred,
        )


def verifier_agreement(candidates: list[CandidateRecord]) -> VerifierAgreement | None:
    """The verifier's agreement with the judge over a run's candidates; None when none was reviewed."""
    reviewed = [c for c in candidates if c.verifier]
    if not reviewed:
        return None
    models = sorted(str(m) for c in reviewed if (m := (c.verifier or {}).get("model")))
    pairs = [(str((c.verifier or {})["verdict"]), c.status) for c in reviewed if c.status is not None]
    deferred = sum((c.verifier or {})["verdict"] == "fail" and c.status is None for c in reviewed)
    return VerifierAgreement.of(models[0] if models else None, pairs, deferred)


@dataclass
class RunSummary:
    """Everything known of a run's outcome (see the module's definitions); `to_dict` is its JSON."""

    counts: RunCounts
    tasks: int = 0
    correctness_rate: float | None = None
    baselines: dict[str, BaselineFigures] = field(default_factory=dict)
    pass_at_k: dict[str, float | None] = field(default_factory=dict)
    median_sol_pct: float | None = None
    rules: dict[str, int] = field(default_factory=dict)
    # Correct attempts timed noisily (metrics.noisy_timing).
    noisy_timing: int = 0
    # Correct attempts a search screened and did not confirm: no time, no speedup (metrics.screened_only).
    screened: int = 0
    # Verdicts whose candidate ran without a filesystem sandbox (harness/walls/sandbox.py).
    not_isolated: int = 0
    # Re-judging another judge's verdicts: how many it called correct, how many of those held up here,
    # and per status and rule what became of the others.
    claimed_correct: int | None = None
    held_up: int | None = None
    claimed_fell: dict[str, int] = field(default_factory=dict)
    # None when no model was called.
    cost: Cost | None = None
    best: BestKernel | None = None
    # The run itself (empty for a bare set of attempts).
    run_id: str = ""
    task: str = ""
    device: str = ""
    strategy: str | None = None
    models: list[str] = field(default_factory=list)
    status: str = ""
    stop_reason: str | None = None
    llm: CallStats | None = None
    judge: JudgeTime = field(default_factory=JudgeTime)
    verifier: VerifierAgreement | None = None
    # What only the process that ran the run knew: the best kernel's file, the model errors, and the
    # executor's statistics.
    best_path: str | None = None
    errors: list[str] = field(default_factory=list)
    executor: ExecutorStats | None = None

    @property
    def attempts(self) -> int:
        """Candidates with a verdict."""
        return self.counts.attempts

    @property
    def statuses(self) -> dict[str, int]:
        """Attempts per status."""
        return self.counts.statuses

    @property
    def correct(self) -> int:
        """Correct attempts."""
        return self.counts.statuses.get("correct", 0)

    @property
    def best_speedup(self) -> float | None:
        """The best kernel's speedup over eager PyTorch."""
        return None if self.best is None else self.best.speedup

    @property
    def cost_per_correct_usd(self) -> float | None:
        """US dollars per correct kernel; None when unknown or no model was called."""
        return None if self.cost is None else self.cost.per_correct_usd

    @property
    def cost_per_task_usd(self) -> float | None:
        """US dollars per task; None when unknown or no model was called."""
        return None if self.cost is None else self.cost.per_task_usd

    def to_dict(self) -> JsonDict:
        """The JSON form (`optimize --json`, `bench --json`, `report --json`, the run's row): one flat
        object, the counts at its top."""
        data = asdict(replace(self, cost=None, executor=None))
        counts = self.counts
        return {
            **data,
            "candidates": counts.candidates,
            "counts": counts.outcomes,
            "judged": counts.judged,
            "cached": counts.cached,
            "rounds": counts.rounds,
            "attempts": counts.attempts,
            "correct": self.correct,
            "statuses": counts.statuses,
            "best_speedup": self.best_speedup,
            "cost": None if self.cost is None else self.cost.to_dict(),
            "executor": None if self.executor is None else self.executor.to_dict(),
        }


def best_kernel(attempts: list[Attempt]) -> BestKernel | None:
    """The fastest correct attempt (metrics.fastest_first), when the attempts are of one task."""
    correct = [a for a in attempts if a.correct and a.verdict is not None]
    if not correct or len({a.task for a in attempts}) != 1:
        return None
    top = min(
        correct,
        key=lambda a: fastest_first(
            speedup_of(a.verdict) or screened_speedup_of(a.verdict), a.candidate or 0
        ),
    )
    verdict = top.verdict
    assert verdict is not None
    return BestKernel(
        top.candidate,
        # Counted from 1, as the live panel counts rounds (the store counts from 0).
        None if top.round is None else top.round + 1,
        top.model,
        speedup_of(verdict),
        dict(verdict.speedups),
        sol_pct_of(verdict),
        screened_speedup_of(verdict),
    )


def summarize(
    attempts: list[Attempt], counts: RunCounts | None = None, cost: Cost | None = None
) -> RunSummary:
    """The benchmark's figures of a set of attempts (their counts, when not given: one candidate each),
    and what their model calls cost."""
    counts = counts or RunCounts(
        candidates=len(attempts), statuses=_in_order(Counter(a.status for a in attempts))
    )
    claimed = [a for a in attempts if a.claimed_correct]
    any_claims = any(a.claimed_correct is not None for a in attempts)
    return RunSummary(
        counts=counts,
        tasks=len({a.task for a in attempts}),
        correctness_rate=sum(a.correct for a in attempts) / len(attempts) if attempts else None,
        baselines={b: baseline_figures(attempts, b) for b in baselines_timed(attempts)},
        pass_at_k={f"pass@{k}": mean_pass_at_k(attempts, k) for k in pass_ks(attempts)},
        median_sol_pct=median_sol_pct(attempts),
        rules=rules_broken(attempts),
        noisy_timing=sum(noisy_timing(a.verdict) for a in attempts),
        screened=sum(screened_only(a.verdict) for a in attempts),
        not_isolated=sum(filesystem_not_isolated(a.verdict) for a in attempts),
        claimed_correct=len(claimed) if any_claims else None,
        held_up=sum(a.correct for a in claimed) if any_claims else None,
        claimed_fell=dict(Counter(fell_to(a) for a in claimed if not a.correct).most_common()),
        cost=cost,
        best=best_kernel(attempts),
    )


def about_run(
    summary: RunSummary,
    run: Run,
    calls: list[CallRecord],
    verdicts: list[VerdictRecord],
    verifier: VerifierAgreement | None = None,
) -> RunSummary:
    """A summary with its run's facts: who ran what, its model calls, the judge's time, the verifier, and
    what the run's process kept in its row (its stored summary)."""
    stored = run.summary or {}
    idle_s = float((stored.get("judge") or {}).get("idle_waiting_s") or 0.0)
    return replace(
        summary,
        run_id=run.id,
        task=run.task,
        device=run.device_name,
        strategy=run.strategy,
        models=list(run.models),
        status=run.status,
        stop_reason=run.stop_reason,
        llm=CallStats.of(calls) if calls else None,
        judge=JudgeTime(round(sum(v.wall_s or 0.0 for v in verdicts), 3), round(idle_s, 3)),
        verifier=verifier,
        best_path=stored.get("best_path"),
        errors=list(stored.get("errors") or []),
        executor=ExecutorStats.from_dict(stored["executor"]) if stored.get("executor") else None,
    )
