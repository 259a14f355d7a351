"""Races found by construction: the happens-before graph of one call's GPU work, from CUPTI's records.

The host issues every operation in the order of its correlation ids. Each stream runs its own operations
in order; an event records what its stream had been given (and had itself waited for) when it was
recorded; a stream that waits on an event waits for all of that; a host synchronisation (of a stream, of
an event, of the device) makes what it waited for done before anything the host issues afterwards. Those
are the only edges: work on a stream other than the caller's that the caller's stream does not wait for,
by the time forward returns (the judge's marker kernel, launched on the caller's stream then), is a race,
however early it happened to finish. A stream that waits on itself, which waits for nothing, is named too.

The records come from PyTorch's profiler with CUDA synchronisation events on (workers/recording.py): each
kernel's, copy's and memset's stream and correlation id, and for each wait or synchronisation its kind, its
stream, and for an event the stream it was recorded on and the correlation id of its record. The
end-of-forward marker (returned.py) stays as a second detector.

What this cannot see: the legacy default stream's implicit synchronisation with blocking streams (CUPTI
records none), so work on a stream made blocking (cupy.cuda.Stream(), cudaStreamCreate) that relies on it
is named a race: make the caller's stream wait explicitly.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from cudasmith.harness.workers.races.returned import UNSYNCHRONISED
from cudasmith.timing.activity import CONTEXT_SYNC, EVENT_SYNC, STREAM_SYNC, STREAM_WAIT

# CUPTI's kinds of synchronisation, as Kineto names its records (timing/activity.py's, which the sampler
# also reads).
SYNC_KINDS = (STREAM_WAIT, EVENT_SYNC, STREAM_SYNC, CONTEXT_SYNC)

# What each stream is known to have done: per stream, the correlation id of its last operation covered.
Known = dict[int, int]


@dataclass(frozen=True)
class StreamOp:
    """One operation the host issued: GPU work (`kind` "work": a kernel, copy or memset, by `name`), or a
    synchronisation (one of SYNC_KINDS); an event's wait or synchronisation names the stream the event was
    recorded on and the correlation id of its record (-1 where the records do not say)."""

    kind: str
    correlation: int
    stream: int
    name: str = ""
    recorded_on: int = -1
    recorded_at: int = -1


def sync_op(name: str, correlation: int, stream: int, metadata: str) -> StreamOp | None:
    """A synchronisation from a Kineto record (its name, correlation id, stream and metadata, a fragment of
    JSON), or None for a record of another kind."""
    if name not in SYNC_KINDS:
        return None
    fields: dict[str, object] = {}
    try:
        text = metadata.strip().rstrip(",")
        fields = (
            json.loads("{" + text + "}") if text and not text.startswith("{") else json.loads(text or "{}")
        )
    except ValueError:
        fields = {}
    recorded_on, recorded_at = (
        fields.get("wait_on_stream", -1),
        fields.get("wait_on_cuda_event_record_corr_id", -1),
    )
    return StreamOp(
        name,
        correlation,
        stream if stream < 2**31 else -1,
        name,
        recorded_on if isinstance(recorded_on, int) else -1,
        recorded_at if isinstance(recorded_at, int) else -1,
    )


def _join(into: Known, other: Known) -> None:
    for stream, correlation in other.items():
        if correlation > into.get(stream, -1):
            into[stream] = correlation


class _History:
    """What each stream, and the host, knew after each operation (to read an event's state at its record)."""

    def __init__(self) -> None:
        self.streams: dict[int, Known] = {}
        self.host: Known = {}
        self._past: list[tuple[int, int, Known]] = []  # (correlation, stream or -1 for the host, state)

    def at(self, stream: int, correlation: int) -> Known:
        """What `stream` had been given and had waited for, with what the host knew, before `correlation`."""
        state: Known = {}
        for seen, owner, known in self._past:
            if seen >= correlation:
                break
            if owner in (stream, -1):
                _join(state, known)
        return state

    def keep(self, correlation: int, owner: int, known: Known) -> None:
        self._past.append((correlation, owner, dict(known)))


def races(ops: Iterable[StreamOp], caller: int, returned: int) -> str | None:
    """Why the call's GPU work is not all ordered before forward returned on the caller's stream (the
    module's rules), or None. `caller`: the caller's stream; `returned`: the correlation id of the marker
    launched on it as forward returned (operations after it are not the call's)."""
    history = _History()
    work: list[StreamOp] = []
    self_waits: list[StreamOp] = []
    for op in sorted(ops, key=lambda o: o.correlation):
        if op.correlation >= returned:
            break
        if op.kind == "work":
            known = history.streams.setdefault(op.stream, {})
            _join(known, history.host)
            known[op.stream] = op.correlation
            history.keep(op.correlation, op.stream, known)
            work.append(op)
        elif op.kind == STREAM_WAIT:
            if op.recorded_on == op.stream and op.stream != caller:
                self_waits.append(op)
            if op.recorded_at >= 0:
                known = history.streams.setdefault(op.stream, {})
                _join(known, history.at(op.recorded_on, op.recorded_at))
                history.keep(op.correlation, op.stream, known)
        elif op.kind == EVENT_SYNC and op.recorded_at >= 0:
            _join(history.host, history.at(op.recorded_on, op.recorded_at))
            history.keep(op.correlation, -1, history.host)
        elif op.kind == STREAM_SYNC:
            _join(history.host, history.streams.get(op.stream, {}))
            history.keep(op.correlation, -1, history.host)
        elif op.kind == CONTEXT_SYNC:
            for known in history.streams.values():
                _join(history.host, known)
            history.keep(op.correlation, -1, history.host)
    covered = dict(history.streams.get(caller, {}))
    _join(covered, history.host)
    late = [op for op in work if op.stream != caller and op.correlation > covered.get(op.stream, -1)]
    if late:
        last = late[-1]
        waited = (
            " (its stream waits on itself there, which waits for nothing)"
            if any(w.stream == last.stream for w in self_waits)
            else ""
        )
        return (
            f"{UNSYNCHRONISED}: {last.name[:160]} on stream {last.stream} is not waited for by the caller's stream "
            f"{caller} when forward returns{waited}, however early it ends (make the caller's stream wait: "
            "torch.cuda.current_stream().wait_stream(side) or an event)"
        )
    if self_waits:
        first = self_waits[0]
        return f"{UNSYNCHRONISED}: stream {first.stream} waits on an event recorded on itself, which waits for nothing"
    return None
