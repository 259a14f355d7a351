"""Kineto's teardown of CUPTI, waited for (timing/teardown.py): Kineto's thread ends only after a later CUDA
API call finalizes CUPTI, so the wait makes such calls until the threads started by the stop have ended.
Played here with a real thread that ends only once a call is made after it armed, as Kineto's does."""

from __future__ import annotations

import os
import threading

import pytest

from cudasmith.timing import teardown
from cudasmith.timing.teardown import TEARDOWN, Teardowns, await_teardown, threads


class KinetoLike:
    """A stop that starts a detached thread, which arms itself and then ends at the first API call made
    after that (the finalize in a call's exit callback); the calls made, and when the thread was armed."""

    def __init__(self) -> None:
        self.armed = threading.Event()
        self.finalized = threading.Event()
        self.calls = 0
        self.calls_when_armed = -1
        self.switch_at_stop: str | None = None

    def stop(self) -> str:
        self.switch_at_stop = os.environ.get(TEARDOWN)
        if self.switch_at_stop == "1":
            threading.Thread(target=self._teardown, daemon=True).start()
        return "results"

    def _teardown(self) -> None:
        self.calls_when_armed = self.calls
        self.armed.set()
        self.finalized.wait(10)

    def api_call(self) -> None:
        self.calls += 1
        if self.armed.is_set():
            self.finalized.set()


@pytest.fixture
def switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TEARDOWN, raising=False)  # restored after the test, whatever it set


def test_the_wait_ends_once_the_teardowns_thread_has_ended_after_a_later_call(switch: None) -> None:
    kineto = KinetoLike()
    os.environ[TEARDOWN] = "1"
    before = threads()
    kineto.stop()
    waited = await_teardown(before, kineto.api_call, limit_s=10.0)
    assert waited is not None
    assert kineto.finalized.is_set() and kineto.calls > kineto.calls_when_armed >= 0
    assert not (threads() - before), "the teardown's thread is gone when the wait returns"


def test_a_thread_that_never_ends_makes_the_wait_stop_at_its_limit(switch: None) -> None:
    before = threads()
    release = threading.Event()
    thread = threading.Thread(target=release.wait, daemon=True)
    thread.start()
    try:
        calls: list[int] = []
        assert await_teardown(before, lambda: calls.append(1), limit_s=0.05) is None
        assert len(calls) >= 2, "the calls go on until the limit"
    finally:
        release.set()
        thread.join()


def test_the_policy_events_tears_down_only_after_recordings_with_event_records(switch: None) -> None:
    teardowns = Teardowns()
    teardowns.configure("events")
    assert os.environ[TEARDOWN] == "1", "between stops on: a start after a teardown attaches CUPTI again"
    timing, call = KinetoLike(), KinetoLike()
    assert teardowns.stop(timing.stop, False, timing.api_call) == "results"
    assert timing.switch_at_stop == "0" and timing.calls == 0, (
        "a timing recording's stop: no teardown, no wait"
    )
    assert os.environ[TEARDOWN] == "1"
    teardowns.stop(call.stop, True, call.api_call)
    assert call.switch_at_stop == "1" and call.finalized.is_set(), "a call's recording: torn down, waited for"
    assert len(teardowns.waited_s) == 1 and teardowns.unfinished == 0


def test_the_switch_stays_on_until_the_teardowns_thread_has_ended(switch: None) -> None:
    # Kineto's thread reads the switch after the finalize: off by then, it attaches CUPTI again itself (on
    # an H100 none of 12 such threads had ended 2 s later).
    seen: list[str | None] = []

    class Reading(KinetoLike):
        def _teardown(self) -> None:
            super()._teardown()
            seen.append(os.environ.get(TEARDOWN))

    teardowns = Teardowns()
    teardowns.configure("events")
    call = Reading()
    teardowns.stop(call.stop, True, call.api_call)
    assert seen == ["1"]


def test_the_policy_every_tears_down_at_every_stop_and_none_leaves_kineto_alone(switch: None) -> None:
    every = Teardowns()
    every.configure("every")
    timing = KinetoLike()
    every.stop(timing.stop, False, timing.api_call)
    assert timing.switch_at_stop == "1" and timing.finalized.is_set() and os.environ[TEARDOWN] == "1"
    os.environ[TEARDOWN] = "0"
    left = Teardowns()  # the switch of event records off: never configured
    call = KinetoLike()
    left.stop(lambda: None, True, call.api_call)
    assert call.calls == 0 and os.environ[TEARDOWN] == "0" and not left.waited_s
    with pytest.raises(ValueError, match="unknown teardown policy"):
        left.configure("always")


def test_the_workers_policy_is_one_object_shared_by_the_recorders() -> None:
    from cudasmith.harness.workers import recording
    from cudasmith.timing import activity

    assert recording.teardowns is teardown.teardowns is activity.teardowns
