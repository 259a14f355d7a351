"""Attributing CUPTI's GPU activity records to timed calls (no GPU needed: the records are made up)."""

from __future__ import annotations

import pytest

from cudasmith.timing import activity
from cudasmith.timing.activity import Activity, spans_between
from cudasmith.timing.protocol import WorkTotal
from cudasmith.timing.spans import SpanLog

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
    def spans(
        records: list[Activity],
        kept: list[bool],
        event_ms: list[float],
        warnings: list[str],
        seen: dict | None = None,
    ) -> list[float] | None:
        log = SpanLog(FLUSH, (BLOCKER,), "cudasmith_close", lambda: None, lambda: FakeRecorder(records))
        log.open(0)
        log.close(len(kept))
        return log.spans(kept, event_ms, warnings, {} if seen is None else seen)

    records = sample(0, [("add", 61, 63)]) + sample(1000, [("add", 61, 64)])
    warnings: list[str] = []
    assert spans(records, [True, True], [0.004, 0.005], warnings) == [
        pytest.approx(0.002),
        pytest.approx(0.003),
    ]
    assert spans(records, [False, True], [0.005], warnings) == [pytest.approx(0.003)]
    assert warnings == []
    seen: dict = {}
    spans(records, [True, True], [0.004, 0.005], warnings, seen)
    assert seen == {"add": WorkTotal("kernel", 5000, 2)}  # what ran, for the kernel audit
    # A sample CUPTI did not see at all: its records are incomplete, the events stand in.
    assert spans(records, [True] * 3, [0.004, 0.005, 0.004], warnings) is None
    assert "CUPTI saw 2 samples of 3" in warnings[-1]
    # Calls with no GPU work: zero, said so; unless CUDA events saw real work CUPTI missed.
    idle = sample(0, []) + sample(1000, [])
    assert spans(idle, [True, True], [0.002, 0.002], warnings) == [0.0, 0.0]
    assert "no GPU work at all in 2 of 2" in warnings[-1]
    assert spans(idle, [True, True], [0.5, 0.5], warnings) is None
    assert "CUDA-event times used" in warnings[-1]


class FakeRecorder:
    """Stands in for an ActivityRecorder: the records it 'saw'."""

    def __init__(self, records: list[Activity]) -> None:
        self.records = records

    def stop(self) -> list[Activity]:
        return self.records


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


class _Event:
    """A Kineto record as the accessors read it."""

    def __init__(self, name: str, device: str, kind: str, start: int = 0, duration: int = 10) -> None:
        self.name, self.device, self.kind, self.start, self.duration = name, device, kind, start, duration


def _read_fakes(monkeypatch: pytest.MonkeyPatch, with_types: bool) -> None:
    monkeypatch.setattr(activity.clock, "CUDA_DEVICE_TYPE", "cuda")
    monkeypatch.setattr(activity, "event_device_type", lambda e: e.device)
    monkeypatch.setattr(activity, "event_name", lambda e: e.name)
    monkeypatch.setattr(activity, "event_start_ns", lambda e: e.start)
    monkeypatch.setattr(activity, "event_duration_ns", lambda e: e.duration)
    monkeypatch.setattr(activity, "_event_activity_type", (lambda e: e.kind) if with_types else None)


@pytest.mark.parametrize("with_types", [True, False])
def test_gpu_work_keeps_kernels_copies_and_memsets_and_nothing_else(
    monkeypatch: pytest.MonkeyPatch, with_types: bool
) -> None:
    _read_fakes(monkeypatch, with_types)
    events = [
        _Event("cudaLaunchKernel", "cpu", "cuda_runtime", 0),
        _Event("relu_kernel", "cuda", "kernel", 100, 30),
        _Event("Memcpy DtoD (Device -> Device)", "cuda", "gpu_memcpy", 200, 5),
        _Event("Memset (Device)", "cuda", "gpu_memset", 300, 2),
        _Event("Context Sync", "cuda", "cuda_sync", 400),
        _Event("Stream Sync", "cuda", "kernel", 450),  # a synchronisation, whatever its type says
        _Event("my-range", "cuda", "gpu_user_annotation", 500),
        _Event("Overhead", "cuda", "overhead", 600),
    ]
    found = activity.gpu_work(events)
    expected = [
        Activity("relu_kernel", 100, 130, "kernel"),
        Activity("Memcpy DtoD (Device -> Device)", 200, 205, "gpu_memcpy"),
        Activity("Memset (Device)", 300, 302, "gpu_memset"),
    ]
    if with_types:
        assert found == expected
    else:  # without types, annotations and overheads on the GPU's timeline read as kernels
        assert found[:3] == expected
        assert [a.name for a in found[3:]] == ["my-range", "Overhead"]
    assert found[0].duration_ns == 30
