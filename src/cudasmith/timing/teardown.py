"""Kineto's teardown of CUPTI, made to end before the next recording starts.

Where TEARDOWN_CUPTI=1 is in the environment when a recording stops (Kineto reads it with getenv at each
stop), Kineto detaches CUPTI from the process, but not at once: the stop starts a detached thread, which
flushes CUPTI's buffers and arms a callback, and CUPTI is finalized in the exit callback of the next CUDA
API call, on whatever thread makes it, after which the thread ends. A recording started before that call
loses its records from there on: on an H100 (2026-12-07), with a teardown after every recording, the timing
sampler's next chunk lost samples ("CUPTI saw N samples of M") and honest kernels were refused.

So a stop that tears down waits for the teardown: it makes CUDA API calls (a device synchronisation, which
the judge captured before any solution loaded) until every thread that was not in the process before the
stop has ended, or until `limit_s`. A thread started by the candidate in that time only makes the wait run
to its limit; it changes no verdict. What the candidate could replace to cut the wait short (the listing,
the switch in the environment) can only cost it its own records, which is a rejection.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

from cudasmith.timing import clock

# Kineto's switch, read at each stop.
TEARDOWN = "TEARDOWN_CUPTI"
LIMIT_S = 2.0
_POLL_S = 0.001
T = TypeVar("T")
# Held before any solution loads: the wait runs after the candidate's calls, in the candidate's process.
_listdir = os.listdir


def threads() -> frozenset[int]:
    """The ids of this process's threads now."""
    try:
        return frozenset(int(name) for name in _listdir("/proc/self/task"))
    except OSError:
        return frozenset()


def await_teardown(
    before: frozenset[int],
    api_call: Callable[[], None],
    limit_s: float = LIMIT_S,
    listing: Callable[[], frozenset[int]] = threads,
) -> float | None:
    """After a stop that tore CUPTI down: CUDA API calls (`api_call`) until no thread is left that was not
    in `before` (the threads before the stop), or `limit_s`; the seconds waited, or None at the limit."""
    began = clock.perf_counter()
    while True:
        api_call()  # the call in whose exit callback CUPTI is finalized, once the thread has armed it
        if not (listing() - before):
            return clock.perf_counter() - began
        if clock.perf_counter() - began >= limit_s:
            return None
        clock.sleep(_POLL_S)


class Teardowns:
    """The judge's choice of which stops tear CUPTI down, applied to Kineto's switch around each stop.

    Kineto reads TEARDOWN_CUPTI three times a recording: at its start (where CUPTI was torn down, it is
    attached again only where the switch is on), at its stop (whether to tear down), and on the teardown's
    thread after the finalize (with the switch on, the thread leaves attaching again to the next start and
    ends; with it off, the thread attaches CUPTI again itself). So the switch is on between stops and for
    every teardown until its thread has ended, and off only for a stop that must not tear down. On an H100
    (2026-12-07, benchmarks/stream_records.py), with the switch turned off again as soon as the stop
    returned, none of 12 teardown threads had ended 2 s later; with it on throughout, 24 of 24 ended, in
    3.6 ms at most, and every recording of the timing's kind after them was whole.

    Its policy: "every" tears CUPTI down at every stop (run on the H100 as above); "events" only at the
    stops of recordings that had CUPTI's records of CUDA events on, the timing's recordings leaving CUPTI
    attached (not yet run on a GPU as set out here); "" (until configured) leaves the environment as it is."""

    def __init__(self) -> None:
        self.policy = ""
        self.waited_s: list[float] = []
        self.unfinished = 0  # teardowns whose thread had not ended within the limit

    def configure(self, policy: str) -> None:
        if policy not in ("", "events", "every"):
            raise ValueError(f"unknown teardown policy {policy!r}: every, events or empty")
        self.policy = policy
        if policy:
            _set("1")

    def stop(self, stop: Callable[[], T], events: bool, api_call: Callable[[], None] | None) -> T:
        """`stop()` (a recording's stop), with Kineto's switch set for it, and the wait for its teardown
        where it tore down and `api_call` (a CUDA API call) is given; what `stop` returned."""
        if not self.policy:
            return stop()
        tear = self.policy == "every" or events
        before = threads()
        _set("1" if tear else "0")
        try:
            result = stop()
            if tear and api_call is not None:
                waited = await_teardown(before, api_call)
                if waited is None:
                    self.unfinished += 1
                else:
                    self.waited_s.append(waited)
        finally:
            _set("1")
        return result


def _set(value: str) -> None:
    """Kineto's switch, written only where it changes: a teardown's thread may be reading it."""
    if os.environ.get(TEARDOWN) != value:
        os.environ[TEARDOWN] = value


# The worker's one policy, set as it imports its recorder (harness/workers/recording.py), before any solution.
teardowns = Teardowns()
