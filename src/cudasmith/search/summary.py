"""A run's summary, computed from the run store: the best kernel, counts per status, cost, the judge's
time, the verifier's precision and recall. What `optimize --json` prints and the run row keeps."""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

from cudasmith.search.convert import candidate_from_record
from cudasmith.search.strategies.base import best
from cudasmith.search.verifier import agreement
from cudasmith.store import CallRecord, Run, RunStore, Usage
from cudasmith.store.runs import model_costs


def _tokens_and_dollars(usage: Usage) -> dict[str, Any]:
    """A tally as the summary writes it."""
    return {
        "calls": usage.calls,
        "answers": usage.completions,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "known_usd": usage.cost_usd,
        "unpriced_answers": usage.unpriced_completions,
        "usd": usage.usd,
    }


def cost_summary(calls: list[CallRecord], correct: int) -> dict[str, Any]:
    """Tokens and dollars per model and in all (store.runs.model_costs); `usd` is None while any answer's
    price is unknown."""
    by_model = model_costs(calls)
    total = sum(by_model.values(), Usage())
    in_all = _tokens_and_dollars(total)
    return {
        "usd": total.usd,
        **{key: in_all[key] for key in ("known_usd", "unpriced_answers", "input_tokens", "output_tokens")},
        "per_correct_usd": total.usd / correct if total.usd is not None and correct else None,
        "by_model": {model: _tokens_and_dollars(usage) for model, usage in by_model.items()},
    }


def summarize(
    store: RunStore, run: Run, judge_idle_waiting_s: float = 0.0, best_path: str | None = None
) -> dict[str, Any]:
    """The summary of a run as stored now."""
    records = store.candidates(run.id)
    candidates = [candidate_from_record(r) for r in records]
    top = best(candidates)
    counts = Counter(
        c.verdict.status if c.verdict else ("skipped" if c.skipped else "unjudged") for c in candidates
    )
    correct = counts.get("correct", 0)
    calls = store.calls(run.id)
    latencies = [c.latency_s for call in calls for c in call.completions if c.latency_s is not None]
    verdicts = store.verdicts(run.id)
    summary: dict[str, Any] = {
        "run_id": run.id,
        "task": run.task,
        "device": run.device_name,
        "strategy": run.strategy,
        "models": run.models,
        "status": run.status,
        "stop_reason": run.stop_reason,
        "best_path": best_path,
        "best_speedup": None if top is None else top.speedup,
        "best": None
        if top is None
        else {
            "candidate": top.id,
            # Counted from 1, as the live panel counts rounds (the store counts from 0).
            "round": top.round + 1,
            "model": top.model,
            "speedups": top.verdict.speedups if top.verdict else {},
            "sol_pct": top.sol_pct(),
        },
        "candidates": len(candidates),
        "counts": dict(sorted(counts.items())),
        "judged": len([v for v in verdicts if v.code_hash is not None]),
        "cached": sum(r.verdict_cached for r in records),
        "rounds": 1 + max((c.round for c in candidates), default=-1),
        "cost": cost_summary(calls, correct),
        "llm": {
            "calls": len(calls),
            "failed_calls": sum(c.status == "failed" for c in calls),
            "latency_median_s": statistics.median(latencies) if latencies else None,
            "latency_max_s": max(latencies, default=None),
        },
        "judge": {
            # Each verdict's judging time, summed: a lane judges several candidates at once, so this
            # exceeds the wall time (`executor.wall_s`) by about the candidates in flight.
            "candidate_s": round(sum(v.wall_s or 0.0 for v in verdicts), 3),
            "idle_waiting_s": round(judge_idle_waiting_s, 3),
        },
        "verifier": None,
    }
    reviewed = [(r.verifier["verdict"], r.status) for r in records if r.verifier and r.status is not None]
    verifier_models = {r.verifier.get("model") for r in records if r.verifier}
    if verifier_models:
        deferred = [r for r in records if r.verifier and r.verifier["verdict"] == "fail" and r.status is None]
        summary["verifier"] = {
            "model": sorted(m for m in verifier_models if m)[0] if any(verifier_models) else None,
            **agreement(reviewed),
            "deferred_unjudged": len(deferred),
        }
    return summary
