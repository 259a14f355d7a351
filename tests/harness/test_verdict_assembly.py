"""What a verdict says it did not check or could not measure, from the rounds' results (no worker runs):
configs a failure left unrun, and times whose sampling stopped before the noise target."""

from __future__ import annotations

import io
from dataclasses import replace
from types import SimpleNamespace

import pytest
from rich.console import Console

from cudasmith.harness.assemble import apply_baselines, finish, imprecise
from cudasmith.harness.baselines import BaselineTime
from cudasmith.harness.session import Judge
from cudasmith.harness.verdict import ConfigResult, Verdict
from cudasmith.harness.wire.results import ConfigDescription, Timing
from cudasmith.harness.wire.status import Status
from cudasmith.report.leaderboard import print_run_details
from cudasmith.report.verdict_table import print_verdict
from cudasmith.store.metrics import Attempt
from cudasmith.store.runs import RunView
from cudasmith.store.summary import summarize
from cudasmith.timing.protocol import Measurement, TimingPlan, default_plan

from conftest import PROBLEMS, SOLUTIONS

CPU_PLAN = default_plan("cpu")
# Samples spread by ±40 % around their median: far from the 0.5 % target.
NOISY_MS = [0.6, 1.4, 0.8, 1.2, 1.0]
STEADY_MS = [1.0] * 20


def summary(samples_ms: list[float], stop: str, scale: float = 1.0, plan: TimingPlan = CPU_PLAN) -> Timing:
    """A measurement as the judge keeps it, from samples made up here."""
    return Timing.of(Measurement([s * scale for s in samples_ms], "perf_counter", plan, stop=stop))


def timed(index: int, candidate: Timing, eager: Timing) -> ConfigResult:
    """A correct config with the candidate's and eager's times, as timing one config leaves it."""
    result = ConfigResult(index, {"n": index}, False, seeds_checked=3, rel_err=1e-7)
    result.timing, result.baseline_timing = candidate, eager
    result.time_ms, result.time_ci95_ms = candidate.median_ms, candidate.ci95_ms
    result.baseline_ms = eager.median_ms
    result.speedup = result.baseline_ms / result.time_ms
    return result


def judged(results: list[ConfigResult]) -> Verdict:
    """A verdict assembled the way the session assembles it."""
    verdict = Verdict(Status.CORRECT, "", "t", "s.py", "cpu")
    for result in results:
        eager = BaselineTime("eager", measurement=result.baseline_timing)
        described = ConfigDescription()
        apply_baselines(
            result, {"eager": eager}, described, "float32", None, f"config {result.index}", verdict.note
        )
    finish(verdict, results)
    return verdict


def rendered(print_table, *args: object) -> str:
    out = io.StringIO()
    print_table(*args, console=Console(file=out, width=200))
    return out.getvalue()


def test_configs_after_a_failure_are_not_checked_in_the_verdict_and_its_json() -> None:
    first = ConfigResult(0, {"n": 8}, False, seeds_checked=1, rel_err=1e-7)
    failing = ConfigResult(1, {"n": 9}, False, Status.INCORRECT, "config 1: 3 of 9 values differ", 1)
    never = ConfigResult(2, "hidden#0", True)
    verdict = Verdict(Status.CORRECT, "", "t", "s.py", "cpu")
    finish(verdict, [first, failing, never])
    assert verdict.status == "incorrect" and verdict.reason == failing.reason
    assert first.status == "correct" and "checking stopped at config 1 (incorrect)" in first.reason
    assert (
        never.status == "not_checked" and never.reason == "not run: checking stopped at config 1 (incorrect)"
    )
    data = verdict.to_dict()
    assert [c["status"] for c in data["configs"]] == ["correct", "incorrect", "not_checked"]
    assert Verdict.from_dict(data).configs[2].status is Status.NOT_CHECKED
    with pytest.raises(Exception, match="not a verdict"):
        Verdict.from_dict({**data, "status": "not_checked"})  # a config's status, never a verdict's
    assert "hidden#0  not_checked" in rendered(print_verdict, verdict)


@pytest.mark.parametrize(
    ("stop", "samples", "noisy"),
    [("time cap", NOISY_MS, True), ("max samples", NOISY_MS, True), ("noise target", STEADY_MS, False)],
)
def test_a_time_short_of_the_noise_target_is_imprecise(stop: str, samples: list[float], noisy: bool) -> None:
    assert imprecise(summary(samples, stop)) is noisy
    # Quiet samples that stopped on the cap (a slow call, few samples) met the target anyway.
    assert not imprecise(summary(STEADY_MS, "time cap"))


def test_noisy_timing_warns_with_the_intervals_and_shows_the_speedup_range() -> None:
    noisy = timed(0, summary(NOISY_MS, "time cap"), summary(STEADY_MS, "noise target", scale=2.0))
    steady = timed(1, summary(STEADY_MS, "noise target"), summary(STEADY_MS, "noise target", scale=3.0))
    verdict = judged([noisy, steady])
    low, high = noisy.speedup_ci95 or (0.0, 0.0)
    assert noisy.noisy and noisy.speedup == pytest.approx(2.0) and low < 2.0 < high
    assert not steady.noisy and steady.speedup_ci95 == pytest.approx([3.0, 3.0])
    (warning,) = verdict.notes
    assert warning.startswith(
        "config 0: noisy timing, stopped at the time cap short of the ±0.5% noise target"
    )
    assert "(the candidate ±" in warning and "eager PyTorch ±" not in warning
    assert f"speedup 2.00x, {low:.2f}x to {high:.2f}x" in warning and "95% interval" in warning
    assert (
        verdict.speedup_ci95 is not None
        and verdict.speedup_ci95[0] < verdict.speedup < verdict.speedup_ci95[1]
    )
    assert verdict.reason.endswith(
        "(geometric mean; {:.2f}x to {:.2f}x: noisy timing)".format(*verdict.speedup_ci95)
    )
    data = verdict.to_dict()
    assert data["configs"][0]["noisy"] and data["configs"][0]["speedup_ci95"] == [low, high]
    table = rendered(print_verdict, verdict)
    assert f"2.00x ({low:.2f}–{high:.2f})" in table and "3.00x (" not in table


def test_steady_timing_says_nothing_of_noise() -> None:
    verdict = judged([timed(0, summary(STEADY_MS, "noise target"), summary(STEADY_MS, "noise target", 2.0))])
    assert verdict.notes == [] and not verdict.configs[0].noisy
    assert verdict.reason.endswith("2.00x eager PyTorch (geometric mean)")


def test_bench_counts_correct_kernels_timed_noisily() -> None:
    noisy = judged([timed(0, summary(NOISY_MS, "time cap"), summary(STEADY_MS, "noise target"))])
    steady = judged([timed(0, summary(STEADY_MS, "noise target"), summary(STEADY_MS, "noise target"))])
    attempts = [Attempt("a", noisy), Attempt("a", steady), Attempt("b", noisy)]
    counted = summarize(attempts)
    assert counted.noisy_timing == 2 and counted.to_dict()["noisy_timing"] == 2
    view = RunView(SimpleNamespace(id="bench-1"), attempts, counted)  # type: ignore[arg-type]
    assert "2 correct kernels timed noisily" in rendered(print_run_details, view)


@pytest.mark.slow
def test_a_forced_small_time_cap_makes_a_real_verdict_warn() -> None:
    """The whole pipeline on the CPU, timing capped at once and a noise target no sampling meets."""
    with Judge(PROBLEMS / "add_small.py", device="cpu", seeds_per_config=1, baselines=()) as judge:
        judge.plan = replace(judge.plan, max_seconds=0.0, target_rel_stderr=0.0)
        verdict = judge.judge(SOLUTIONS / "vector_add_cpu.py")
    assert verdict.status == "correct", verdict.reason
    (config,) = verdict.configs
    assert config.timing is not None and config.timing.stop == "time cap"
    assert config.noisy and config.speedup_ci95 is not None
    assert any(
        note.startswith("config 0 {'n': 65537}: noisy timing, stopped at the time cap")
        for note in verdict.notes
    ), verdict.notes
    assert "noisy timing)" in verdict.reason
