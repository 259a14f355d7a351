"""The numbers a kernel benchmark publishes, as pure functions over verdicts (`Verdict.to_dict()`).

Definitions (every rate is over all attempts, every speedup is a candidate's geometric mean over its
configs, baseline time over candidate time, measured side by side on one device):

- correctness rate: correct attempts / attempts.
- fast_p against a baseline: attempts that are correct *and* faster than p × the baseline, over all
  attempts (KernelBench's fast_p). fast_0 is the correctness rate; a correct kernel not timed against
  a baseline is not counted fast against it for p > 0.
- speedup: geometric mean and median over the correct attempts timed against the baseline. A search's
  screened candidates that were not confirmed (harness/confirm.py) have no time: they count as correct,
  never as fast, and `screened` says how many there were.
- pass@k: the unbiased estimator of Chen et al. (2021), 1 - C(n-c, k) / C(n, k) for a task with n
  samples of which c are correct, averaged over the tasks with at least k samples.
- % of speed of light of a kernel: the median over its timed configs of speed-of-light time over its
  time (cudasmith device's measured peaks); the benchmark reports the median over correct kernels.
- cost: US dollars of the model calls, per correct kernel and per task; unknown when any call's price
  is unknown (never taken as zero), absent when no model was called.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from cudasmith.harness.verdict import geometric_mean
from cudasmith.harness.walls.sandbox import NOT_ISOLATED
from cudasmith.harness.wire.status import STATUSES
from cudasmith.store.rules import rule_broken

FAST_P = (0.0, 1.0, 1.5, 2.0)
# Baselines in the order reports show them (names of cudasmith.harness.baselines.BASELINES).
BASELINE_ORDER = ("eager", "compile", "compile-max-autotune", "expert")


@dataclass(frozen=True)
class Attempt:
    """One kernel attempted at a task: a solution file or a model's sample, with the judge's verdict.

    `claimed_correct` is what another judge said of the same file (KernelBench's eval_results.json),
    None when nothing was claimed; `round` and `cost_usd` (cumulative spend of the run when it was
    made) place it in a search."""

    task: str
    verdict: dict[str, Any]
    label: str = ""
    sample: int = 0
    round: int | None = None
    cost_usd: float | None = None
    claimed_correct: bool | None = None

    @property
    def correct(self) -> bool:
        """True when the judge found it correct."""
        return self.verdict.get("status") == "correct"


def speedup_of(verdict: dict[str, Any], baseline: str = "eager") -> float | None:
    """A correct verdict's geometric-mean speedup against `baseline`; None when incorrect or untimed."""
    if verdict.get("status") != "correct":
        return None
    value = (verdict.get("speedups") or {}).get(baseline)
    if value is None and baseline == "eager":
        value = verdict.get("speedup")
    return float(value) if isinstance(value, int | float) and value > 0 else None


def screened_only(verdict: dict[str, Any]) -> bool:
    """A correct verdict whose candidate a search screened and did not confirm (harness/confirm.py): it has
    a screened speedup and no time, so speedup_of gives None and it is never counted fast."""
    screen = verdict.get("screen")
    return (
        verdict.get("status") == "correct" and isinstance(screen, dict) and screen.get("confirmed") is False
    )


def screened_speedup_of(verdict: dict[str, Any]) -> float | None:
    """A screened-only verdict's screened speedup over eager PyTorch (never a measurement's); None otherwise."""
    value = (verdict.get("screen") or {}).get("speedup") if screened_only(verdict) else None
    return float(value) if isinstance(value, int | float) and value > 0 else None


def sol_pct_of(verdict: dict[str, Any]) -> float | None:
    """A verdict's % of speed of light: the median over its timed configs; None when none was timed."""
    values = [c["sol_pct"] for c in verdict.get("configs") or [] if isinstance(c.get("sol_pct"), int | float)]
    return statistics.median(values) if values else None


def noisy_timing(verdict: dict[str, Any]) -> bool:
    """A correct verdict with a config whose timing stopped before the noise target: its speedup is
    known only to a range (the configs' speedup_ci95)."""
    return verdict.get("status") == "correct" and any(c.get("noisy") for c in verdict.get("configs") or [])


def baselines_timed(attempts: list[Attempt]) -> list[str]:
    """The baselines any correct attempt was timed against, in report order."""
    seen = {name for a in attempts for name in (a.verdict.get("speedups") or {})}
    if any(a.verdict.get("speedup") is not None for a in attempts):
        seen.add("eager")
    return [*(b for b in BASELINE_ORDER if b in seen), *sorted(seen - set(BASELINE_ORDER))]


def fast_p(attempts: list[Attempt], p: float, baseline: str = "eager") -> float | None:
    """Share of attempts that are correct and more than p times faster than the baseline."""
    if not attempts:
        return None
    if p <= 0:
        return sum(a.correct for a in attempts) / len(attempts)
    fast = sum(1 for a in attempts if (s := speedup_of(a.verdict, baseline)) is not None and s > p)
    return fast / len(attempts)


def fast_p_curve(attempts: list[Attempt], baseline: str = "eager") -> tuple[list[float], list[float]]:
    """fast_p as a step function of p: the thresholds where it drops (0 and each speedup) and its value
    just after each."""
    speedups = sorted(s for a in attempts if (s := speedup_of(a.verdict, baseline)) is not None)
    thresholds = [0.0, *speedups]
    return thresholds, [fast_p(attempts, p, baseline) or 0.0 for p in thresholds]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for n samples with c correct: 1 - C(n-c, k) / C(n, k), as a stable product."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, not {n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def samples_per_task(attempts: list[Attempt]) -> dict[str, tuple[int, int]]:
    """(samples, correct) per task."""
    counts: dict[str, list[int]] = {}
    for attempt in attempts:
        entry = counts.setdefault(attempt.task, [0, 0])
        entry[0] += 1
        entry[1] += attempt.correct
    return {task: (n, c) for task, (n, c) in counts.items()}


def mean_pass_at_k(attempts: list[Attempt], k: int) -> float | None:
    """pass@k averaged over the tasks with at least k samples; None when no task has k samples."""
    values = [pass_at_k(n, c, k) for n, c in samples_per_task(attempts).values() if n >= k]
    return sum(values) / len(values) if values else None


def pass_ks(attempts: list[Attempt]) -> list[int]:
    """The k worth reporting: 1, the powers of ten below it, and the fewest samples any task has."""
    fewest = min((n for n, _ in samples_per_task(attempts).values()), default=0)
    return sorted({k for k in (1, 10, 100, fewest) if 1 <= k <= fewest})


@dataclass
class BaselineFigures:
    """fast_p and speedups of a set of attempts against one baseline."""

    fast_p: dict[str, float | None]
    geomean_speedup: float | None
    median_speedup: float | None
    timed: int


@dataclass
class Cost:
    """What the model calls of a run cost: total US dollars (None when some price is unknown)."""

    total_usd: float | None
    calls: int
    unpriced_calls: int = 0


@dataclass
class Summary:
    """Everything a bench reports about one set of attempts (see the module's definitions)."""

    attempts: int
    tasks: int
    correct: int
    correctness_rate: float | None
    baselines: dict[str, BaselineFigures]
    pass_at_k: dict[str, float | None]
    median_sol_pct: float | None
    statuses: dict[str, int]
    rules: dict[str, int]
    # Correct attempts timed noisily (see noisy_timing).
    noisy_timing: int = 0
    # Correct attempts a search screened and did not confirm: no time, no speedup (see screened_only).
    screened: int = 0
    cost: Cost | None = None
    cost_per_correct_usd: float | None = None
    cost_per_task_usd: float | None = None
    # Re-judging another judge's verdicts: how many it called correct, how many of those held up here,
    # and per status and rule what became of the others.
    claimed_correct: int | None = None
    held_up: int | None = None
    claimed_fell: dict[str, int] = field(default_factory=dict)
    # Verdicts whose candidate ran without a filesystem sandbox (harness/walls/sandbox.py).
    not_isolated: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return asdict(self)


def _fast_key(p: float) -> str:
    return f"fast_{p:g}"


def baseline_figures(attempts: list[Attempt], baseline: str) -> BaselineFigures:
    """fast_p at FAST_P, and geometric-mean and median speedup over the correct attempts."""
    speedups = [s for a in attempts if (s := speedup_of(a.verdict, baseline)) is not None]
    return BaselineFigures(
        fast_p={_fast_key(p): fast_p(attempts, p, baseline) for p in FAST_P},
        geomean_speedup=geometric_mean(speedups),
        median_speedup=statistics.median(speedups) if speedups else None,
        timed=len(speedups),
    )


def _fell(attempt: Attempt) -> str:
    """What became of a kernel another judge called correct: its status, and the rule for rejections."""
    rule = rule_broken(attempt.verdict)
    return f"rejected: {rule}" if rule else str(attempt.verdict.get("status"))


def summarize(attempts: list[Attempt], cost: Cost | None = None) -> Summary:
    """The benchmark's numbers for a set of attempts and, when a model made them, what it cost."""
    correct = sum(a.correct for a in attempts)
    tasks = len({a.task for a in attempts})
    sol = [s for a in attempts if a.correct and (s := sol_pct_of(a.verdict)) is not None]
    statuses = Counter(str(a.verdict.get("status")) for a in attempts)
    claimed = [a for a in attempts if a.claimed_correct]
    any_claims = any(a.claimed_correct is not None for a in attempts)
    total = None if cost is None else cost.total_usd
    return Summary(
        attempts=len(attempts),
        tasks=tasks,
        correct=correct,
        correctness_rate=correct / len(attempts) if attempts else None,
        baselines={b: baseline_figures(attempts, b) for b in baselines_timed(attempts)},
        pass_at_k={f"pass@{k}": mean_pass_at_k(attempts, k) for k in pass_ks(attempts)},
        median_sol_pct=statistics.median(sol) if sol else None,
        statuses={s: statuses[s] for s in (*STATUSES, *sorted(set(statuses) - set(STATUSES))) if statuses[s]},
        rules=dict(Counter(r for a in attempts if (r := rule_broken(a.verdict))).most_common()),
        noisy_timing=sum(noisy_timing(a.verdict) for a in attempts),
        screened=sum(screened_only(a.verdict) for a in attempts),
        cost=cost,
        cost_per_correct_usd=total / correct if total is not None and correct else None,
        cost_per_task_usd=total / tasks if total is not None and tasks else None,
        claimed_correct=len(claimed) if any_claims else None,
        held_up=sum(a.correct for a in claimed) if any_claims else None,
        claimed_fell=dict(Counter(_fell(a) for a in claimed if not a.correct).most_common()),
        not_isolated=sum(filesystem_not_isolated(a.verdict) for a in attempts),
    )


def filesystem_not_isolated(verdict: dict[str, Any]) -> bool:
    """Whether the candidate's worker ran with no filesystem sandbox (verdicts from before there was one,
    or never run in a worker, do not count)."""
    filesystem = (verdict.get("isolation") or {}).get("filesystem")
    return isinstance(filesystem, str) and filesystem.startswith(NOT_ISOLATED)
