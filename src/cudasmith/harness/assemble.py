"""Assembling a verdict from what the rounds found: speedups against each baseline, the roofline, the
overall status and reason. Pure functions of their arguments: no worker is asked anything here."""

from __future__ import annotations

from collections.abc import Callable

from cudasmith.device import DevicePeaks
from cudasmith.harness.baselines import BASELINES, BaselineTime
from cudasmith.harness.confirm import describe as describe_screen
from cudasmith.harness.verdict import ConfigResult, Failure, Verdict, geometric_mean, overall_status
from cudasmith.harness.wire.results import ConfigDescription, Timing
from cudasmith.harness.wire.status import Rule, Status
from cudasmith.harness.witnesses.roofline import roofline
from cudasmith.timing.protocol import NOISE_TARGET_STOP
from cudasmith.wording import plural


def apply_baselines(
    result: ConfigResult,
    baselines: dict[str, BaselineTime],
    described: ConfigDescription,
    dtype: str | None,
    peaks: DevicePeaks | None,
    label: str,
    note: Callable[[str], None],
) -> tuple[bool, str | None]:
    """Every baseline's speedup, the roofline and % of speed of light.

    Returns whether a baseline ran faster than speed of light (the peaks then look underestimated), and
    why the candidate's time is impossible, if it is.
    """
    assert result.time_ms is not None
    _speedup_range(result, label, note)
    point = roofline(described, dtype, peaks) if peaks is not None else None
    beyond_light = False
    for name, measured in baselines.items():
        entry = measured.entry()
        if measured.measurement is None:
            result.baselines[name] = entry
            note(f"{BASELINES[name]} not timed on {label}: {measured.error}")
            continue
        baseline_ms = measured.measurement.median_ms
        entry.speedup = baseline_ms / result.time_ms if result.time_ms > 0 else None
        entry.sol_pct = point.sol_pct(baseline_ms) if point else None
        result.baselines[name] = entry
        if measured.drift:
            note(f"{BASELINES[name]} on {label} {measured.drift}")
        if point is not None and (point.impossible(baseline_ms) or (entry.sol_pct or 0) > 100):
            beyond_light = True
            note(
                f"{BASELINES[name]} on {label} ran at {entry.sol_pct or 0:.0f}% of speed of light: the device's "
                "measured peaks look underestimated"
            )
    if point is None:
        return beyond_light, None
    result.roofline = point
    result.sol_pct = point.sol_pct(result.time_ms)
    impossible = point.impossible(result.time_ms)
    return beyond_light, f"{label}: {impossible}" if impossible else None


def imprecise(measurement: Timing | None) -> bool:
    """A measurement that stopped, on its time cap or its sample cap, before its median was known to its
    plan's noise target."""
    if measurement is None or measurement.plan is None:
        return False
    return (
        measurement.stop != NOISE_TARGET_STOP and measurement.rel_stderr > measurement.plan.target_rel_stderr
    )


def _interval_text(measurement: Timing) -> str:
    low, high = measurement.ci95_ms
    return f"{measurement.median_ms:.4g} ms (95% interval {low:.4g} to {high:.4g} ms)"


def _speedup_range(result: ConfigResult, label: str, note: Callable[[str], None]) -> None:
    """The speedup's range from the candidate's and eager's intervals, and a warning where either time
    was still noisy when sampling stopped."""
    candidate, eager = result.timing, result.baseline_timing
    if not candidate or not eager or not result.speedup:
        return
    (time_low, time_high), (eager_low, eager_high) = candidate.ci95_ms, eager.ci95_ms
    if time_low <= 0:
        return
    result.speedup_ci95 = [eager_low / time_high, eager_high / time_low]
    measured = {"the candidate": candidate, BASELINES["eager"]: eager}
    noisy = {who: measurement for who, measurement in measured.items() if imprecise(measurement)}
    result.noisy = bool(noisy)
    if not noisy:
        return
    first = next(iter(noisy.values()))
    noise = ", ".join(f"{who} ±{m.rel_stderr:.1%}" for who, m in noisy.items())
    low, high = result.speedup_ci95
    target = first.plan.target_rel_stderr if first.plan is not None else 0.0
    note(
        f"{label}: noisy timing, stopped at the {first.stop or 'cap'} short of the "
        f"±{target:.1%} noise target ({noise}): the candidate "
        f"{_interval_text(candidate)}, {BASELINES['eager']} {_interval_text(eager)}; speedup "
        f"{result.speedup:.2f}x, {low:.2f}x to {high:.2f}x"
    )


def finish(verdict: Verdict, results: list[ConfigResult], early: Failure | None = None) -> None:
    """The verdict's status, reason, rule, speedups and shares from its configs (or from an early failure:
    a worker's that failed or refused before any config was checked)."""
    verdict.configs = results
    checks = [r.kernelbench_tolerance for r in results if r.kernelbench_tolerance is not None]
    verdict.kernelbench_tolerance = all(checks) if checks else None
    if verdict.rules == "kernelbench" and verdict.kernelbench_tolerance is not None:
        within = "within" if verdict.kernelbench_tolerance else "outside"
        verdict.note(
            f"KernelBench's own check (allclose in float32, atol = rtol = 1e-4 for float32, 1e-2 for "
            f"half types): {within} tolerance on the input sets compared"
        )
    if early is not None:
        verdict.status, verdict.reason, verdict.rule = early.status, early.reason, early.rule
        return
    status = overall_status([r.status for r in results])
    verdict.status = status
    if status != Status.CORRECT:
        failing = next((r for r in results if r.status == status), None)
        verdict.reason = failing.reason if failing is not None else str(status)
        verdict.rule = (failing.rule if failing is not None else None) or Rule.of_status(status)
        _stopped_at(results, failing)
        return
    timed = [r for r in results if r.speedup]
    verdict.speedup = geometric_mean([r.speedup for r in timed])
    ranges = [r.speedup_ci95 for r in timed if r.speedup_ci95]
    if timed and len(ranges) == len(timed):
        low, high = geometric_mean([r[0] for r in ranges]), geometric_mean([r[1] for r in ranges])
        verdict.speedup_ci95 = None if low is None or high is None else [low, high]
    for name in BASELINES:
        ratios = [r.baselines[name].speedup for r in results if name in r.baselines]
        if (mean := geometric_mean([x for x in ratios if x])) is not None:
            verdict.speedups[name] = mean
    shared = [r for r in results if r.own_share is not None and r.time_ms]
    if shared:
        total = sum(r.time_ms or 0.0 for r in shared)
        verdict.own_share = sum((r.own_share or 0.0) * (r.time_ms or 0.0) for r in shared) / total
    checked = sum(r.seeds_checked for r in results)
    speed = ""
    if verdict.speedup:
        spread = ""
        if verdict.speedup_ci95 is not None and any(r.noisy for r in timed):
            spread = "; {:.2f}x to {:.2f}x: noisy timing".format(*verdict.speedup_ci95)
        speed = f"; {verdict.speedup:.2f}x {verdict.baseline} (geometric mean{spread})"
    if verdict.screen is not None:
        speed += describe_screen(verdict.screen, verdict.baseline)
    verdict.reason = f"correct on {plural(len(results), 'config')}, {plural(checked, 'input set')}{speed}"
    if verdict.torch_ops:
        ops = ", ".join(f"{name} x{count}" for name, count in sorted(verdict.torch_ops.items()))
        verdict.note(f"PyTorch operators ran inside forward (allowed for this task): {ops}")
    if (
        verdict.own_share is not None
        and verdict.own_share < 1.0
        and (verdict.torch_ops or verdict.own_share < 0.5)
    ):
        verdict.note(f"{verdict.own_share:.0%} of the timed GPU time was in the solution's own kernels")


def _stopped_at(results: list[ConfigResult], failing: ConfigResult | None) -> None:
    """Say what a failure left unchecked: the cascade stops at the first failure, so configs still
    `correct` matched on the input sets they saw, or saw none (not checked)."""
    if failing is None:
        where = ""
    else:
        where = f" at {failing.config}" if failing.hidden else f" at config {failing.index}"
        where += f" ({failing.status})"
    for result in results:
        if result.status != Status.CORRECT:
            continue
        if result.seeds_checked == 0:
            result.status, result.reason = Status.NOT_CHECKED, f"not run: checking stopped{where}"
        elif not result.reason:
            checked = plural(result.seeds_checked, "input set")
            result.reason = (
                f"matches on {checked} (worst rel_err {result.rel_err or 0:.1e}); checking stopped{where}"
            )


def as_given(verdict: Verdict, staged: str | None, given: str) -> None:
    """What the candidate's worker said of its copy of the solution (`staged`, in a scratch folder the
    user never sees), said of the file the user named (`given`): in the reason, notes, configs' reasons
    and artifacts (tracebacks, compiler logs, what the solution printed)."""
    if not staged:
        return

    def mended(text: str) -> str:
        return text.replace(staged, given)

    verdict.reason = mended(verdict.reason)
    verdict.notes = [mended(note) for note in verdict.notes]
    for result in verdict.configs:
        result.reason = mended(result.reason)
    verdict.artifacts = {name: mended(text) for name, text in verdict.artifacts.items()}
