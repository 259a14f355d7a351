"""Where a judge session's start goes: the first time each of its steps is reached, in seconds since the
session was made (its workers spawned, the problem described and loaded, the first candidate's worker
taken, its solution loaded, checked, timed, its verdict given). A session pays its start once; these marks
say what its first verdict waited for (benchmarks/session_start.py prints them, throughput.py's stream
rows too)."""

from __future__ import annotations

import threading
import time


class StartClock:
    """The first time each named step of a session was reached; safe from several threads."""

    def __init__(self) -> None:
        self.began = time.monotonic()
        self._marks: dict[str, float] = {}
        self._lock = threading.Lock()

    def mark(self, step: str) -> None:
        """Step `step` was reached now; only its first time is kept."""
        at = time.monotonic() - self.began
        with self._lock:
            self._marks.setdefault(step, at)

    def marks(self) -> dict[str, float]:
        """Each step reached so far and when (seconds since the session was made), in the order reached."""
        with self._lock:
            return {step: round(at, 3) for step, at in sorted(self._marks.items(), key=lambda item: item[1])}
