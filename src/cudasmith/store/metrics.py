"""The numbers a kernel benchmark publishes, as pure functions over attempts and their verdicts.

Definitions (an attempt is a candidate that got a verdict: judged, taken from the evaluation cache, or an
answer with no code; a candidate the search skipped as a repeat of another is no attempt, since nothing
judged it. Every rate is over all attempts, every speedup is a candidate's geometric mean over its
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
  is unknown (never taken as zero), absent when no model was called (summary.py).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass

from cudasmith.harness.verdict import Verdict, geometric_mean
from cudasmith.harness.walls.sandbox import NOT_ISOLATED
from cudasmith.store.integrity import TAMPERED
from cudasmith.store.rules import rule_broken

FAST_P = (0.0, 1.0, 1.5, 2.0)
# Baselines in the order reports show them (names of cudasmith.harness.baselines.BASELINES).
BASELINE_ORDER = ("eager", "compile", "compile-max-autotune", "expert")


@dataclass(frozen=True)
class Attempt:
    """One kernel attempted at a task: a solution file or a model's sample, with the judge's verdict
    (None when its stored row fails its MAC: it counts as TAMPERED, never as correct).

    `claimed_correct` is what another judge said of the same file (KernelBench's eval_results.json),
    None when nothing was claimed; `candidate`, `model`, `round` and `cost_usd` (cumulative spend of the
    run when it was made) place it in a search."""

    task: str
    verdict: Verdict | None
    label: str = ""
    sample: int = 0
    round: int | None = None
    cost_usd: float | None = None
    claimed_correct: bool | None = None
    candidate: int | None = None
    model: str | None = None

    @property
    def status(self) -> str:
        """The verdict's status; TAMPERED when the stored verdict fails its MAC."""
        return TAMPERED if self.verdict is None else self.verdict.status.value

    @property
    def correct(self) -> bool:
        """True when the judge found it correct."""
        return self.verdict is not None and self.verdict.correct


def speedup_of(verdict: Verdict | None, baseline: str = "eager") -> float | None:
    """A correct verdict's geometric-mean speedup against `baseline`; None when incorrect or untimed."""
    if verdict is None or not verdict.correct:
        return None
    value = verdict.speedups.get(baseline)
    if value is None and baseline == "eager":
        value = verdict.speedup
    return float(value) if isinstance(value, int | float) and value > 0 else None


def screened_only(verdict: Verdict | None) -> bool:
    """A correct verdict whose candidate a search screened and did not confirm (harness/confirm.py): it has
    a screened speedup and no time, so speedup_of gives None and it is never counted fast."""
    return verdict is not None and verdict.correct and verdict.screened_only


def screened_speedup_of(verdict: Verdict | None) -> float | None:
    """A screened-only verdict's screened speedup over eager PyTorch (never a measurement's); None otherwise."""
    value = (
        verdict.screen.speedup if verdict is not None and verdict.screen and screened_only(verdict) else None
    )
    return float(value) if isinstance(value, int | float) and value > 0 else None


def sol_pct_of(verdict: Verdict | None) -> float | None:
    """A verdict's % of speed of light: the median over its timed configs; None when none was timed."""
    values = [c.sol_pct for c in verdict.configs if isinstance(c.sol_pct, int | float)] if verdict else []
    return statistics.median(values) if values else None


def noisy_timing(verdict: Verdict | None) -> bool:
    """A correct verdict with a config whose timing stopped before the noise target: its speedup is
    known only to a range (the configs' speedup_ci95)."""
    return verdict is not None and verdict.correct and any(c.noisy for c in verdict.configs)


def filesystem_not_isolated(verdict: Verdict | None) -> bool:
    """Whether the candidate's worker ran with no filesystem sandbox (verdicts from before there was one,
    or never run in a worker, do not count)."""
    filesystem = verdict.isolation.get("filesystem") if verdict else None
    return isinstance(filesystem, str) and filesystem.startswith(NOT_ISOLATED)


def fastest_first(speedup: float | None, candidate_id: int) -> tuple[float, int]:
    """The order of correct kernels, fastest first (one correct but untimed counts as 1x), the earlier of
    equals first: how the search and the run's summary pick the best kernel."""
    return (-(speedup or 1.0), candidate_id)


def baselines_timed(attempts: list[Attempt]) -> list[str]:
    """The baselines any correct attempt was timed against, in report order."""
    seen = {name for a in attempts if a.verdict for name in a.verdict.speedups}
    if any(a.verdict is not None and a.verdict.speedup is not None for a in attempts):
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


def fell_to(attempt: Attempt) -> str:
    """What became of a kernel another judge called correct: its status, and the rule for rejections."""
    rule = rule_broken(attempt.verdict)
    return f"rejected: {rule}" if rule else attempt.status


def rules_broken(attempts: list[Attempt]) -> dict[str, int]:
    """Rejections per rule, most first."""
    return dict(Counter(r for a in attempts if (r := rule_broken(a.verdict))).most_common())


def median_sol_pct(attempts: list[Attempt]) -> float | None:
    """The median % of speed of light over the correct attempts that were timed."""
    sol = [s for a in attempts if a.correct and (s := sol_pct_of(a.verdict)) is not None]
    return statistics.median(sol) if sol else None
