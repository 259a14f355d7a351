"""The benchmark's numbers on verdicts whose answers are known: fast_p, speedups, pass@k, % of speed
of light, statuses, rules and cost."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest

from cudasmith.harness.verdict import Verdict
from cudasmith.harness.witnesses.screen import screen
from cudasmith.store.legacy import rule_of_reason
from cudasmith.store.metrics import (
    Attempt,
    fast_p,
    fast_p_curve,
    mean_pass_at_k,
    pass_at_k,
    sol_pct_of,
)
from cudasmith.store.records import CallRecord, CompletionRecord
from cudasmith.store.rules import OTHER_RULE, caught_by, rule_broken
from cudasmith.store.summary import Cost, summarize

from conftest import EXPLOITS


def verdict(
    status: str,
    speedups: dict[str, float] | None = None,
    reason: str = "",
    sol: tuple[float, ...] = (),
    rule: str | None = None,
) -> Verdict:
    speedups = speedups or {}
    return read(
        {
            "status": status,
            "reason": reason,
            "rule": rule,
            "speedup": speedups.get("eager"),
            "speedups": speedups,
            "configs": [{"index": i, "config": {}, "hidden": False, "sol_pct": s} for i, s in enumerate(sol)],
        }
    )


def read(data: dict[str, Any]) -> Verdict:
    """A verdict from its JSON form, as the store reads one."""
    return Verdict.from_dict(data)


ATTEMPTS = [
    Attempt("a", verdict("correct", {"eager": 3.0, "compile": 0.5}, sol=(10.0, 30.0, 20.0))),
    Attempt("a", verdict("correct", {"eager": 1.2}, sol=(40.0,))),
    Attempt("b", verdict("correct", {"eager": 0.8, "compile": 1.6})),
    Attempt("b", verdict("incorrect", reason="values differ")),
    Attempt(
        "c", verdict("rejected", reason="config 0: input 0 was modified by forward", rule="input-mutation")
    ),
]


def test_fast_p_counts_correct_and_faster_over_all_attempts() -> None:
    assert fast_p(ATTEMPTS, 0) == pytest.approx(3 / 5)  # fast_0 is the correctness rate
    assert fast_p(ATTEMPTS, 1.0) == pytest.approx(2 / 5)
    assert fast_p(ATTEMPTS, 1.5) == pytest.approx(1 / 5)
    assert fast_p(ATTEMPTS, 3.0) == 0.0  # strictly faster than p times
    # Against torch.compile only two correct kernels were timed: the untimed one is never "fast".
    assert fast_p(ATTEMPTS, 1.0, "compile") == pytest.approx(1 / 5)
    assert fast_p([], 1.0) is None


def test_fast_p_curve_steps_down_at_each_speedup() -> None:
    thresholds, values = fast_p_curve(ATTEMPTS)
    assert thresholds == [0.0, 0.8, 1.2, 3.0]
    assert values == pytest.approx([3 / 5, 2 / 5, 1 / 5, 0.0])


def test_pass_at_k_matches_enumeration_of_subsets() -> None:
    for n, c in ((5, 0), (5, 2), (6, 6), (7, 3)):
        outcomes = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            subsets = list(itertools.combinations(outcomes, k))
            expected = sum(any(s) for s in subsets) / len(subsets)
            assert pass_at_k(n, c, k) == pytest.approx(expected), (n, c, k)
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_mean_pass_at_k_averages_over_tasks_with_enough_samples() -> None:
    assert mean_pass_at_k(ATTEMPTS, 1) == pytest.approx((1.0 + 0.5 + 0.0) / 3)
    assert mean_pass_at_k(ATTEMPTS, 2) == pytest.approx((1.0 + 1.0) / 2)  # task c has one sample
    assert mean_pass_at_k(ATTEMPTS, 3) is None


def test_summary_of_a_known_set() -> None:
    summary = summarize(ATTEMPTS)
    assert (summary.attempts, summary.tasks, summary.correct) == (5, 3, 3)
    assert summary.correctness_rate == pytest.approx(0.6)
    assert list(summary.baselines) == ["eager", "compile"]
    eager = summary.baselines["eager"]
    assert eager.fast_p == pytest.approx({"fast_0": 0.6, "fast_1": 0.4, "fast_1.5": 0.2, "fast_2": 0.2})
    assert eager.geomean_speedup == pytest.approx((3.0 * 1.2 * 0.8) ** (1 / 3))
    assert eager.median_speedup == pytest.approx(1.2)
    assert summary.baselines["compile"].timed == 2
    assert summary.pass_at_k == pytest.approx({"pass@1": 0.5})
    # Per kernel the median over its configs (20 and 40), then the median over kernels.
    assert summary.median_sol_pct == pytest.approx(30.0)
    assert summary.statuses == {"correct": 3, "incorrect": 1, "rejected": 1}
    assert summary.rules == {"input-mutation": 1}
    assert summary.claimed_correct is None


def test_cost_per_correct_kernel_and_per_task() -> None:
    calls = [call("a", 0.5), call("a", 1.0), call("b", None)]
    cost = Cost.of(calls, correct=3, tasks=3)
    assert cost is not None and cost.total.usd is None, "one answer's price is unknown"
    assert cost.per_correct_usd is None and cost.per_task_usd is None, "unknown, never counted as 0"
    known = Cost.of(calls[:2], correct=3, tasks=2)
    assert known is not None and known.total.usd == pytest.approx(1.5)
    assert (known.per_correct_usd, known.per_task_usd) == pytest.approx((0.5, 0.75))
    assert Cost.of([], correct=3, tasks=3) is None, "no model: no cost at all"
    assert summarize(ATTEMPTS).cost is None


def call(model: str, usd: float | None) -> CallRecord:
    answer = CompletionRecord(1, 1, 0, "", None, model, 100, 50, usd, 1.0, {})
    return CallRecord(1, "run", "key", "propose", model, {}, {}, "done", None, "", None, [answer])


TORCH_SOFTMAX = "PyTorch operator aten::_softmax called inside forward (1x)"


def test_claims_of_another_judge_are_checked() -> None:
    claims = [
        Attempt("a", verdict("correct", {"eager": 2.0}), claimed_correct=True),
        Attempt("a", verdict("rejected", reason=TORCH_SOFTMAX, rule="pytorch-compute"), claimed_correct=True),
        Attempt("b", verdict("incorrect", reason="values differ"), claimed_correct=True),
        Attempt("b", verdict("compile_error", reason="nvcc: error"), claimed_correct=False),
    ]
    summary = summarize(claims)
    assert (summary.claimed_correct, summary.held_up) == (3, 1)
    assert summary.claimed_fell == {"rejected: pytorch-compute": 1, "incorrect": 1}


def test_sol_pct_is_none_when_nothing_was_timed() -> None:
    assert sol_pct_of(verdict("correct", sol=())) is None
    assert math.isclose(sol_pct_of(verdict("correct", sol=(5.0, 1.0))) or 0, 3.0)


@pytest.mark.parametrize(
    ("solution", "rule"),
    [
        ("patch_allclose.py", "tampering"),
        ("exit_at_import.py", "early-exit"),
        ("torch_compiled.py", "pytorch-compute"),
        ("thread_worker.py", "processes-threads"),
        ("stale_scavenge.py", "introspection"),
    ],
)
def test_static_screen_findings_name_their_rule(solution: str, rule: str) -> None:
    finding = screen((EXPLOITS / solution).read_text())
    assert finding is not None and finding.rule == rule, finding
    rejected = read({"status": "rejected", "reason": str(finding), "rule": str(finding.rule)})
    assert rule_broken(rejected) == rule
    assert caught_by(rejected) == "static screen"


@pytest.mark.parametrize(
    ("reason", "rule"),
    [
        ("config 0 {'n': 7}: PyTorch operator aten::_softmax called inside forward (1x)", "pytorch-compute"),
        ("config 1 {}: input 0 was modified by forward", "input-mutation"),
        ("config 0 {}: the output of timed call 7 is wrong although the checked calls were right", "caching"),
        ("config 0 {}: 0.01 µs is under the roofline floor of 2.00 µs (…): impossible", "impossible-time"),
        ("config 0 {}: 3 answers arrived but the worker sent 2: forged results", "forged-results"),
        ("config 0 {}: the solution replaced torch.allclose (after forward)", "tampering"),
        ("config 0 {}: the solution left 1 thread(s) running (after forward): Thread-1", "processes-threads"),
        ("config 0 {}: the solution ended the worker (exit code 0) while loading", "early-exit"),
        ("config 0 {}: something the harness will say one day", OTHER_RULE),
    ],
)
def test_an_older_judges_reasons_give_their_rule_once(reason: str, rule: str) -> None:
    # Only the store's migration of verdicts stored before verdicts named their rule reads a reason.
    assert rule_of_reason("rejected", reason) == rule
    assert caught_by(read({"status": "rejected", "reason": reason})) == "run time"


def test_only_rejections_break_rules_and_the_rule_named_is_the_one_counted() -> None:
    wrong = read({"status": "incorrect", "reason": "input 0 was modified", "rule": "wrong-answer"})
    assert rule_broken(wrong) is None
    caching = read({"status": "rejected", "reason": "input 0 was modified", "rule": "caching"})
    assert rule_broken(caching) == "caching"
    # A verdict that names no rule (a file of an older judge) is counted, under "other", never guessed.
    assert rule_broken(read({"status": "rejected", "reason": "input 0 was modified"})) == OTHER_RULE
    assert rule_broken(None) is None, "a stored verdict that fails its MAC breaks no rule we could name"
    assert rule_of_reason("incorrect", "values differ") == "wrong-answer"
    assert rule_of_reason("correct", "") is None
