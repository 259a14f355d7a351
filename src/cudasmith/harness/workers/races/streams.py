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
stream, and for an event the stream it was recorded on and the correlation id of its record. Kineto finds
that record through a map it fills as it reads CUPTI's buffers, which CUPTI does not order (before torch
2.12 the record is missing, or is a later one, when the buffers come out of order), so where the records of
the events themselves are in the trace (CUPTI's "cudaEvent", with the event's id) the graph takes the last
record of that event issued before the wait, as CUDA does; a record issued after the wait is never taken
for it. The end-of-forward marker (returned.py) stays as a second detector.

One exception, torch's own: as a CUDA graph's capture begins (CUDAGeneratorState::capture_prologue), torch
fills its generator's seed and offset, two int64 tensors of one element, on the capture stream before the
capture, and nothing orders those fills before the caller's stream. In a call that launched a CUDA graph,
ATen's int64 fills on a stream that ran nothing else in the call, two per graph launched at most, are not
the call's work (`capture_prologue`). An int64 constant is all such work can write.

What this cannot see: the legacy default stream's implicit synchronisation with blocking streams (CUPTI
records none), so work on a stream made blocking (cupy.cuda.Stream(), cudaStreamCreate) that relies on it
is named a race: make the caller's stream wait explicitly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from cudasmith.harness.workers.races.returned import UNSYNCHRONISED
from cudasmith.timing.activity import CONTEXT_SYNC, EVENT_RECORD, EVENT_SYNC, STREAM_SYNC, STREAM_WAIT

# CUPTI's kinds of synchronisation, as Kineto names its records (timing/activity.py's, which the sampler
# also reads).
SYNC_KINDS = (STREAM_WAIT, EVENT_SYNC, STREAM_SYNC, CONTEXT_SYNC)

# What each stream is known to have done: per stream, the correlation id of its last operation covered.
Known = dict[int, int]


@dataclass(frozen=True)
class StreamOp:
    """One operation the host issued: GPU work (`kind` "work": a kernel, copy or memset, by `name`), a
    synchronisation (one of SYNC_KINDS), or an event's record on `stream` (EVENT_RECORD); an event's wait or
    synchronisation names the stream the event was recorded on and the correlation id of its record (-1
    where the records do not say), and an event's record or wait names CUPTI's id of the event (-1: not
    said)."""

    kind: str
    correlation: int
    stream: int
    name: str = ""
    recorded_on: int = -1
    recorded_at: int = -1
    event: int = -1


def _fields(metadata: str) -> dict[str, object]:
    """A Kineto record's fields, from its metadata (a fragment of JSON, or a whole object); {} when unread."""
    text = metadata.strip().rstrip(",")
    try:
        fields = (
            json.loads("{" + text + "}") if text and not text.startswith("{") else json.loads(text or "{}")
        )
    except ValueError:
        return {}
    return fields if isinstance(fields, dict) else {}


def _int(fields: dict[str, object], key: str) -> int:
    value = fields.get(key, -1)
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def _stream(stream: int) -> int:
    return stream if 0 <= stream < 2**31 else -1


def sync_op(name: str, correlation: int, stream: int, metadata: str) -> StreamOp | None:
    """A synchronisation, or an event's record, from a Kineto record (its name, correlation id, stream and
    metadata, a fragment of JSON), or None for a record of another kind."""
    if name == EVENT_RECORD:
        fields = _fields(metadata)
        on = _int(fields, "stream")
        return StreamOp(
            EVENT_RECORD,
            correlation,
            _stream(on if on >= 0 else stream),
            name,
            event=_int(fields, "event_id"),
        )
    if name not in SYNC_KINDS:
        return None
    fields = _fields(metadata)
    return StreamOp(
        name,
        correlation,
        _stream(stream),
        name,
        _int(fields, "wait_on_stream"),
        _int(fields, "wait_on_cuda_event_record_corr_id"),
        _int(fields, "wait_on_cuda_event_id"),
    )


def resolve(ops: Iterable[StreamOp]) -> list[StreamOp]:
    """The operations, each event's wait or synchronisation naming the record it waited for: the last record
    of its event issued before it, where the trace holds the events' records; else Kineto's, unless that
    record was issued after the wait (then it is not the one waited for, and the source is unknown)."""
    ordered = sorted(ops, key=lambda o: o.correlation)
    last: dict[int, StreamOp] = {}  # event id -> its latest record so far
    out: list[StreamOp] = []
    for op in ordered:
        if op.kind == EVENT_RECORD:
            if op.event >= 0:
                last[op.event] = op
        elif op.kind in (STREAM_WAIT, EVENT_SYNC):
            record = last.get(op.event) if op.event >= 0 else None
            if record is not None:
                op = replace(op, recorded_on=record.stream, recorded_at=record.correlation)
            elif op.recorded_at >= op.correlation:
                op = replace(op, recorded_on=-1, recorded_at=-1)
        out.append(op)
    return out


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
    launched on it as forward returned (operations after it are not the call's). Waits are read as
    `resolve` reads them."""
    history = _History()
    work: list[StreamOp] = []
    self_waits: list[StreamOp] = []
    for op in resolve(ops):
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


# The kernel of ATen's fill of an int64 tensor, as CUPTI names it.
INT64_FILL = re.compile(r"at::native::.*FillFunctor<(long|long long|int64_t)>")
# What torch's capture prologue fills: a generator's seed and its offset.
PROLOGUE_FILLS = 2


def capture_prologue(work: Iterable[StreamOp], caller: int, graphs: int) -> frozenset[int]:
    """The correlation ids of the work that torch's capture prologue can account for (the module's one
    exception): ATen's int64 fills on streams other than `caller` that ran only such fills, in a call that
    launched `graphs` CUDA graphs, PROLOGUE_FILLS per graph at most; none where there are more."""
    if graphs <= 0:
        return frozenset()
    side = [op for op in work if op.kind == "work" and op.stream != caller]
    streams = {op.stream for op in side}
    only_fills = {s for s in streams if all(INT64_FILL.search(op.name) for op in side if op.stream == s)}
    fills = [op.correlation for op in side if op.stream in only_fills]
    return frozenset(fills) if len(fills) <= PROLOGUE_FILLS * graphs else frozenset()
