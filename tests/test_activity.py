"""Attributing CUPTI's GPU activity records to timed calls (no GPU needed: the records are made up)."""

from __future__ import annotations

import pytest

from cudasmith.harness.activity import Activity, spans_between

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
