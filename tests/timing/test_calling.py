"""Timed calls on the CPU: each on a thread of its own whose CPU time is the calls', and budgets counted in
CPU time, so that how many calls a judge makes does not depend on how loaded the machine is."""

from __future__ import annotations

import threading
import time

import pytest

import cudasmith.timing.protocol as protocol
from cudasmith.timing.calling import start_call_thread
from cudasmith.timing.measure import measure
from cudasmith.timing.protocol import WALL_BACKSTOP_FACTOR, CallHooks, StopRule, TimingPlan, warm_up

QUICK = TimingPlan(
    l2_state="cold", warmup_calls=2, warmup_ms=0.0, min_samples=5, max_samples=5, min_sampling_s=0.0
)


def _spin(seconds: float) -> None:
    ends = time.thread_time() + seconds
    while time.thread_time() < ends:
        pass


def test_calls_run_on_the_call_thread_whose_cpu_time_never_exceeds_what_they_claim() -> None:
    """A call's claimed time is wall time on the call thread, which is at least the CPU time that thread spent
    on it, whatever else runs on the machine: the parent's check (harness/witnesses/bracket.py) rests on
    it."""
    thread = start_call_thread()
    seen: list[int] = []

    def run(index: int) -> int:
        seen.append(threading.get_native_id())
        _spin(0.002)
        return index

    before = thread.cpu_s()
    result = measure(run, 2, "cpu", QUICK)
    spent = thread.cpu_s() - before
    claimed = (sum(result.samples_ms) + result.warmup_ms) / 1e3
    assert set(seen) == {thread.native_id} and thread.native_id != threading.get_native_id()
    assert result.warmup_calls == 2 and len(result.samples_ms) == 5
    assert spent >= 7 * 0.002, "the calls' own CPU time is the call thread's"
    assert spent <= claimed + 7 * 0.001 + 0.05, "beyond the calls, a hand-over and a cache eviction each"


def test_a_failure_in_a_call_is_raised_where_the_caller_waits() -> None:
    start_call_thread()

    def run(index: int) -> None:
        raise ValueError("the candidate's own error")

    with pytest.raises(ValueError, match="the candidate's own error"):
        measure(run, 1, "cpu", QUICK)
    assert measure(lambda index: index, 1, "cpu", QUICK).samples_ms, "the thread serves the next call"


class _Clocks:
    """A CPU clock and a wall clock, advanced by hand."""

    def __init__(self) -> None:
        self.cpu = self.wall = 0.0

    def tick(self, cpu: float, wall: float) -> None:
        self.cpu += cpu
        self.wall += wall


def test_budgets_on_cpu_time_make_as_many_calls_on_a_loaded_machine_as_on_an_idle_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A machine loaded four times over makes each call wait for a core: counted in wall time, warm-up and
    sampling would end after a quarter of the calls; counted in CPU time, after the same calls."""
    plan = TimingPlan(warmup_calls=1, warmup_ms=50.0, min_samples=3, min_sampling_s=0.1, max_seconds=0.5)
    counts = []
    for load in (1.0, WALL_BACKSTOP_FACTOR):
        clocks = _Clocks()
        monkeypatch.setattr(protocol, "_perf_counter", lambda c=clocks: c.wall)

        def call(index: int, c: _Clocks = clocks, w: float = load) -> tuple[float, None]:
            c.tick(0.010, 0.010 * w)  # 10 ms of CPU time per call, waited for `load` times over
            return 10.0 * w, None

        warmed, _ = warm_up(call, 1, plan, lambda: None, CallHooks(), lambda c=clocks: c.cpu)
        rule = StopRule(plan, lambda c=clocks: c.cpu)
        while rule.reason() is None:
            call(0)
            rule.add(1.0 + rule.count * 0.5)  # noisy: sampling runs to the cap
        counts.append((warmed, rule.count))
    assert counts[0] == counts[1], counts


def test_a_call_that_spends_no_cpu_time_still_ends_at_the_wall_backstop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clocks = _Clocks()
    monkeypatch.setattr(protocol, "_perf_counter", lambda: clocks.wall)
    plan = TimingPlan(min_samples=3, max_seconds=0.5)
    rule = StopRule(plan, lambda: clocks.cpu)
    while rule.reason() is None:
        clocks.tick(0.0, 0.05)  # a call that sleeps
        rule.add(1.0 + rule.count * 0.5)
    assert rule.reason() == "time cap"
    assert clocks.wall == pytest.approx(plan.max_seconds * WALL_BACKSTOP_FACTOR, abs=0.06)
