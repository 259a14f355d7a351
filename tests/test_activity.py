"""Attributing CUPTI's GPU activity records to timed calls (no GPU needed: the records are made up)."""

from __future__ import annotations

import pytest

from cudasmith.timing.activity import Activity, spans_between

FLUSH, BLOCKER = "cudasmith_read", "cudasmith_blocker"
US = 1000  # nanoseconds


def sample(at_us: int, work: list[tuple[str, int, int]]) -> list[Activity]:
    """One cold sample starting at `at_us`: flush, blocker, then the call's work (name, start, end in µs)."""
    ours = [
        Activity(FLUSH, at_us * US, (at_us + 30) * US),
        Activity(BLOCKER, (at_us + 30) * US, (at_us + 60) * US),
    ]
    return ours + [Activity(name, (at_us + start) * US, (at_us + end) * US) for name, start, end in work]


def test_a_call_is_timed_from_its_first_work_to_its_last_on_any_stream() -> None:
    records = sample(0, [("add", 61, 63)]) + sample(1000, [("gemm", 61, 161), ("epilogue", 162, 170)])
    assert spans_between(records, FLUSH, [BLOCKER]) == [pytest.approx(0.002), pytest.approx(0.109)]


def test_side_stream_work_that_ran_while_the_gpu_was_blocked_counts() -> None:
    # The call launched a 50 µs kernel on its own stream, which ran during the blocker's spin, and a
    # 1 µs kernel on the timing stream after the release.
    records = sample(0, [("hidden", 35, 85), ("visible", 61, 62)])
    assert spans_between(records, FLUSH, [BLOCKER]) == [pytest.approx(0.050)]


def test_calls_without_gpu_work_and_records_before_the_first_sample() -> None:
    records = [Activity("warm-up", 0, 5 * US), *sample(100, []), *sample(200, [("add", 61, 65)])]
    assert spans_between(records, FLUSH, [BLOCKER]) == [None, pytest.approx(0.004)]


def test_records_arrive_in_any_order() -> None:
    records = sample(0, [("a", 61, 70)]) + sample(500, [("b", 61, 64)])
    assert spans_between(list(reversed(records)), FLUSH, [BLOCKER]) == [
        pytest.approx(0.009),
        pytest.approx(0.003),
    ]


def test_cupti_spans_stand_in_for_event_times_only_when_they_saw_every_sample() -> None:
    from cudasmith.timing.cuda import _cupti_samples, _Sample

    def taken(*event_ms: float) -> list[_Sample]:
        return [_Sample(event_ms=e, host_ms=0.01, clock_mhz=1980.0, timed_out=False) for e in event_ms]

    records = sample(0, [("add", 61, 63)]) + sample(1000, [("add", 61, 64)])
    warnings: list[str] = []
    assert _cupti_samples(records, True, taken(0.004, 0.005), [True, True], warnings) == [
        pytest.approx(0.002),
        pytest.approx(0.003),
    ]
    assert _cupti_samples(records, True, taken(0.004, 0.005), [False, True], warnings) == [
        pytest.approx(0.003)
    ]
    assert warnings == []
    # A sample CUPTI did not see at all: its records are incomplete, the events stand in.
    assert _cupti_samples(records, True, taken(0.004, 0.005, 0.004), [True] * 3, warnings) is None
    assert "CUPTI saw 2 samples of 3" in warnings[-1]
    # Calls with no GPU work: zero, said so; unless CUDA events saw real work CUPTI missed.
    idle = sample(0, []) + sample(1000, [])
    assert _cupti_samples(idle, True, taken(0.002, 0.002), [True, True], warnings) == [0.0, 0.0]
    assert "no GPU work at all in 2 of 2" in warnings[-1]
    assert _cupti_samples(idle, True, taken(0.5, 0.5), [True, True], warnings) is None
    assert "CUDA-event times used" in warnings[-1]


def test_work_after_a_sample_is_closed_is_not_the_calls() -> None:
    # After the call and the device-wide sync, the harness launches its closing kernel and then prepares
    # the next call's inputs (perturbing them): that work must not lengthen the sample.
    records = sample(0, [("add", 61, 63), ("cudasmith_close", 70, 71), ("perturb", 75, 400)])
    records += sample(1000, [("add", 61, 64), ("cudasmith_close", 70, 71)])
    assert spans_between(records, FLUSH, [BLOCKER], closing="cudasmith_close") == [
        pytest.approx(0.002),
        pytest.approx(0.003),
    ]
    assert spans_between(records, FLUSH, [BLOCKER])[0] > 0.3  # without the closing kernel it would count
