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
to its limit; it changes no verdict.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

# Kineto's switch, read at each stop.
TEARDOWN = "TEARDOWN_CUPTI"
LIMIT_S = 2.0
_POLL_S = 0.001
T = TypeVar("T")


def threads() -> frozenset[int]:
    """The ids of this process's threads now."""
    try:
        return frozenset(int(name) for name in os.listdir("/proc/self/task"))
    except OSError:
        return frozenset()


def tears_down() -> bool:
    """Whether a recording stopped now has Kineto tear CUPTI down."""
    return os.environ.get(TEARDOWN, "") == "1"


def await_teardown(
    before: frozenset[int],
    api_call: Callable[[], None],
    limit_s: float = LIMIT_S,
    listing: Callable[[], frozenset[int]] = threads,
) -> float | None:
    """After a stop that tore CUPTI down: CUDA API calls (`api_call`) until no thread is left that was not
    in `before` (the threads before the stop), or `limit_s`; the seconds waited, or None at the limit."""
    began = time.perf_counter()
    while True:
        api_call()  # the call in whose exit callback CUPTI is finalized, once the thread has armed it
        if not (listing() - before):
            return time.perf_counter() - began
        if time.perf_counter() - began >= limit_s:
            return None
        time.sleep(_POLL_S)


class Teardowns:
    """The judge's choice of which stops tear CUPTI down, applied to Kineto's switch around each stop.

    Its policy: "events", only stops of recordings that had CUPTI's records of CUDA events on (the other
    recordings leave CUPTI attached, as Kineto does by default); "every", every stop; "" (until configured)
    leaves the environment as it is."""

    def __init__(self) -> None:
        self.policy = ""
        self.waited_s: list[float] = []
        self.unfinished = 0  # teardowns that did not end within the limit

    def configure(self, policy: str) -> None:
        if policy not in ("", "events", "every"):
            raise ValueError(f"unknown teardown policy {policy!r}: events, every or empty")
        self.policy = policy
        if policy:
            os.environ[TEARDOWN] = self._between()

    def _between(self) -> str:
        return "1" if self.policy == "every" else "0"

    def stop(self, stop: Callable[[], T], events: bool, api_call: Callable[[], None] | None) -> T:
        """`stop()` (a recording's stop), with Kineto's switch set for it, and the wait for its teardown
        where it tore down and `api_call` (a CUDA API call) is given; what `stop` returned."""
        if not self.policy:
            return stop()
        tear = self.policy == "every" or events
        before = threads()
        os.environ[TEARDOWN] = "1" if tear else "0"
        try:
            result = stop()
        finally:
            os.environ[TEARDOWN] = self._between()
        if tear and api_call is not None:
            waited = await_teardown(before, api_call)
            if waited is None:
                self.unfinished += 1
            else:
                self.waited_s.append(waited)
        return result


# The worker's one policy, set as it imports its recorder (harness/workers/recording.py), before any solution.
teardowns = Teardowns()
