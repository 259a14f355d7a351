"""Times as stamps: when a measurement was taken, when a row of the run store was written."""

from __future__ import annotations

from datetime import datetime, timezone

# The run store's times, to the millisecond: rows written within one second keep their order.
STORE_TIMESPEC = "milliseconds"


def now_iso(timespec: str = "seconds") -> str:
    """The current UTC time in ISO 8601, e.g. '2026-01-01T12:00:00+00:00' ('measured at' stamps)."""
    return datetime.now(timezone.utc).isoformat(timespec=timespec)
