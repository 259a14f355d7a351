"""The timing protocol on the CPU: statistics, the stop rule, rotation, and clocks a candidate cannot bend."""

from __future__ import annotations

import json
import time

import pytest

from cudasmith import evaluate
from cudasmith.timing import protocol as timing
from cudasmith.timing.measure import measure
from cudasmith.timing.protocol import (
    CallHooks,
    Measurement,
    StopRule,
    TimingError,
    TimingPlan,
    default_plan,
    median_ci95,
    median_rel_stderr,
)

from conftest import PROBLEMS, SOLUTIONS

# A plan that stops as soon as the noise target allows, for tests that only need a few samples.
PATCHED = "vector_add_patches_timers.py"
# Less than any call of a Python forward that calls a C function can take, in milliseconds.
CALL_FLOOR_MS = 0.002
QUICK = TimingPlan(l2_state="hot", warmup_calls=1, warmup_ms=0.0, min_sampling_s=0.0, max_seconds=0.5)
SLEEP_S = 0.002


def test_median_interval_is_order_statistics_and_noise_is_its_width() -> None:
    ordered = [float(x) for x in range(1, 101)]
    low, high = median_ci95(ordered)
    assert low < 50.5 < high
    assert (low, high) == (40.0, 61.0)  # n = 100: ranks 40 and 61, as for a binomial(100, 1/2)
    assert median_rel_stderr(ordered) == pytest.approx((61 - 40) / (2 * 1.96) / 50.5)
    assert median_rel_stderr([5.0]) == float("inf")
    assert median_rel_stderr([2.0] * 20) == 0.0


def test_stop_rule_waits_for_min_samples_then_stops_on_noise() -> None:
    rule = StopRule(TimingPlan(min_sampling_s=0.0))
    for _ in range(timing.MIN_SAMPLES - 1):
        rule.add(1.0)
        assert rule.reason() is None
    rule.add(1.0)
    assert rule.reason() == "noise target"


def test_stop_rule_keeps_sampling_noisy_calls_until_the_time_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]  # the rule's clock, moved by hand: seconds
    monkeypatch.setattr(timing, "_perf_counter", lambda: now[0])
    rule = StopRule(TimingPlan(min_sampling_s=0.0, max_seconds=0.05))
    for value in [1.0, 3.0] * 10:
        rule.add(value)
    now[0] += 0.049
    assert rule.reason() is None  # half the samples 3x the others: far from 0.5 %, and under the cap
    now[0] += 0.002
    assert rule.reason() == "time cap"
    capped = StopRule(TimingPlan(max_samples=4, min_sampling_s=10.0))
    for value in [1.0, 3.0, 1.0, 3.0]:
        capped.add(value)
    assert capped.reason() == "max samples"


def test_a_median_known_to_one_tick_of_a_coarse_clock_stops_the_rule() -> None:
    """CUPTI's spans on an H100 fall on a 32 ns grid: for a 1.5 µs kernel the 0.5 % target asks for an
    interval narrower than one tick, which more samples reach only by luck. One tick wide is enough; a
    tick coarser than MAX_TICK_REL of the median, or gaps finer than a nanosecond, never are."""
    tick = 32e-6  # ms
    values = [round(v / tick) * tick for v in (1.41e-3, 1.44e-3, 1.5e-3, 1.54e-3, 1.57e-3, 1.6e-3, 1.63e-3)]
    counts = (4, 9, 14, 16, 12, 8, 3)  # quantised spans, as an H100 gave them
    samples = sorted(v for v, n in zip(values, counts, strict=True) for _ in range(n))
    assert timing.clock_tick(samples) == pytest.approx(tick)
    low, high = median_ci95(samples)
    assert high - low == pytest.approx(tick)
    assert median_rel_stderr(samples) > timing.TARGET_REL_STDERR
    rule = StopRule(TimingPlan(min_sampling_s=0.0))
    rule.judge_on(samples)
    rule.count = len(samples)
    assert rule.reason() == "noise target"

    assert not timing.within_one_tick([1.0, 1.0, 2.0, 2.0, 2.0])  # a tick of 50 % of the median
    assert timing.clock_tick([1.0, 1.0 + 1e-9, 1.5]) == pytest.approx(0.5)  # under a nanosecond: one tick
    assert timing.clock_tick([1.0, 1.0 + 2e-6, 1.5]) == pytest.approx(0.5, abs=2e-6)  # 2 ns: one tick


def test_a_tick_read_with_a_nanosecond_of_jitter_is_still_one_tick() -> None:
    """Spans of a 1.5 µs kernel as an H100 reads them (ns: count): each tick of 32 ns read a nanosecond either
    side. With the median between two ticks the interval is one tick wide (0.54 % of the median as a
    standard error, over the target): the rule stops there, as on an exact grid, not at the sample cap."""
    counts = {1439: 2, 1440: 20, 1441: 3, 1471: 4, 1472: 30, 1473: 5, 1503: 3, 1504: 40, 1505: 4}
    counts |= {1535: 5, 1536: 45, 1537: 3, 1567: 2, 1568: 30, 1569: 2, 1599: 1, 1600: 20, 1601: 2}
    samples = sorted(ns * 1e-6 for ns, n in counts.items() for _ in range(n))
    assert timing.clock_tick(samples) == pytest.approx(32e-6)
    low, high = median_ci95(samples)
    assert (round(low * 1e6), round(high * 1e6)) == (1504, 1536)
    assert median_rel_stderr(samples) > timing.TARGET_REL_STDERR
    assert timing.within_one_tick(samples)
    rule = StopRule(TimingPlan(min_sampling_s=0.0))
    rule.judge_on(samples)
    rule.count = len(samples)
    assert rule.reason() == "noise target"
    # Bounds two ticks apart are not one tick, jitter or not.
    wide = sorted([1631e-6] * 30 + [1664e-6] * 5 + [1697e-6] * 30)
    assert timing.clock_tick(wide) == pytest.approx(33e-6)
    assert not timing.within_one_tick(wide)
    assert timing.clock_tick([1.0, 1.0 + 1e-9]) == 0.0
    spread = StopRule(TimingPlan(min_sampling_s=0.0, max_seconds=10.0))
    spread.judge_on([1e-3 + k * 2e-6 for k in range(60)])  # a fine clock, 12 % spread: sampling goes on
    spread.count = 60
    assert spread.reason() is None


def test_plans_are_validated_and_graph_mode_needs_a_gpu() -> None:
    with pytest.raises(ValueError, match="l2_state"):
        TimingPlan(l2_state="warm")
    with pytest.raises(ValueError, match="launch"):
        TimingPlan(launch="eager")
    assert default_plan("cpu").max_seconds == timing.MAX_SECONDS_CPU
    assert default_plan("cuda", "hot", "graph") == TimingPlan(l2_state="hot", launch="graph")
    with pytest.raises(TimingError, match="needs a GPU"):
        measure(lambda i: None, 1, "cpu", TimingPlan(launch="graph"))


def test_cpu_measure_times_the_call_rotates_inputs_and_shows_outputs() -> None:
    called, seen = [], []

    def run(index: int) -> int:
        called.append(index)
        time.sleep(SLEEP_S)
        return index * 10

    class Record(CallHooks):
        def before(self, sample: int | None, index: int) -> None:
            prepared.append(sample)

        def after(self, sample: int | None, index: int, output: object, kept: bool) -> None:
            (warmed if sample is None else seen).append((index, output))

    prepared: list[int | None] = []
    warmed: list[tuple[int, object]] = []
    result = measure(run, 3, "cpu", QUICK, Record())
    assert result.method == "perf_counter" and result.stop in {"noise target", "time cap", "max samples"}
    assert result.median_ms >= SLEEP_S * 1e3
    assert set(called) == {0, 1, 2}
    assert len(seen) == len(result.samples_ms) and all(out == index * 10 for index, out in seen)
    assert [index for index, _ in seen[:6]] == [0, 1, 2, 0, 1, 2]
    # before() ran for every warm-up call (sample None) and then every sample, in order
    assert prepared == [None] * len(warmed) + list(range(len(seen)))
    assert {index for index, _ in warmed} == {0, 1, 2}


def test_the_check_after_a_call_comes_first_and_outside_its_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """CallHooks.called runs as the call returns, before anything the timer looks up (here a replaced clock
    of measure.py's that the timer must not call once the first call ran), and its time is not the call's."""
    import cudasmith.timing.calling as measure_module

    events: list[str] = []

    def run(index: int) -> None:
        events.append("call")
        # What a candidate could do during its call: replace the clock the timer would look up next.
        monkeypatch.setattr(measure_module, "_perf_counter", lambda: events.append("replaced clock") or 0.0)

    class Check(CallHooks):
        def called(self, sample: int | None) -> None:
            events.append("check")
            time.sleep(0.01)  # a slow check: not in the call's time

        def after(self, sample: int | None, index: int, output: object, kept: bool) -> None:
            events.append("after")

    result = measure(run, 2, "cpu", QUICK, Check())
    assert "replaced clock" not in events
    assert events[:3] == ["call", "check", "after"] and events.count("call") == events.count("check")
    assert max(result.samples_ms) < 10.0


def test_a_patched_clock_does_not_change_the_measurement(monkeypatch: pytest.MonkeyPatch) -> None:
    real = time.perf_counter
    monkeypatch.setattr(time, "perf_counter", lambda: real() / 1000)
    monkeypatch.setattr(time, "monotonic", lambda: 0.0)
    result = measure(lambda i: time.sleep(SLEEP_S), 1, "cpu", QUICK)
    assert result.median_ms >= SLEEP_S * 1e3
    assert any("replaced by the code under test" in w and "time.perf_counter" in w for w in result.warnings)


def test_measurement_summary_is_json_with_raw_samples() -> None:
    result = Measurement([1.0, 2.0, 3.0], "perf_counter", QUICK, stop="time cap")
    summary = json.loads(json.dumps(result.summary()))
    assert summary["median_ms"] == 2.0 and summary["n"] == 3
    assert summary["samples_ms"] == [1.0, 2.0, 3.0] and summary["plan"]["l2_state"] == "hot"


@pytest.mark.slow
def test_a_solution_that_patches_timers_is_refused_and_could_not_have_changed_its_time() -> None:
    problem = PROBLEMS / "kernelbench_style_add.py"
    options = {"device": "cpu", "seeds_per_config": 1}
    refused = evaluate(SOLUTIONS / PATCHED, problem=problem, screen=False, **options)
    assert refused.status == "rejected"
    assert "replaced" in refused.reason and "time.perf_counter" in refused.reason
    # With the defences off (measuring their cost) the same solution is timed: by the clocks the
    # harness captured before it was imported, so its patches change nothing but a note.
    timed = evaluate(SOLUTIONS / PATCHED, problem=problem, defences=False, **options)
    assert timed.status == "correct", timed.reason
    timing = timed.configs[0].timing
    assert timing is not None
    # A Python forward with a ctypes call takes microseconds; through the patched clock (1000x slow)
    # the same call would read as nanoseconds.
    assert min(timing.samples_ms) > CALL_FLOOR_MS, timing.samples_ms[:5]
    assert any("torch.cuda.Event.elapsed_time" in note for note in timed.notes)
