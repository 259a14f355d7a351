"""What this torch's profiler tells the judge about a call's streams: the records the happens-before graph
(harness/workers/races/streams.py) is built from, for a few patterns of side-stream work, and the graph's
reading of each. Run it where a new torch or driver is met, before trusting the race check there.

    python benchmarks/stream_records.py [--raw] [--hang-s 30]   # with the judge's switch of CUPTI's event
                                                                # records (recording.py), on by default
    CUDASMITH_CUDA_EVENT_RECORDS=0 python benchmarks/stream_records.py   # with it off

For each pattern the judge's own steps are taken as in a correctness call (workers/forward.py): its
recording starts, its canary wait is issued on the caller's stream, the pattern runs, the end-of-forward
marker is launched, and the recording stops. The table gives, per pattern, what the graph said and what it
was expected to say; `--raw` adds every synchronisation and event record as Kineto gave it (kind, stream,
correlation id, the recorded stream and correlation Kineto named, CUPTI's event id). A run that hangs
prints every thread's Python stack after --hang-s and exits (on torch 2.11, with CUPTI's event records
switched on and CUPTI left attached between recordings, TEARDOWN_CUPTI=0, the judge's own cuEventRecord hung
here at the third recording, on the H200 and on the H100). Last, it prints what a launch costs the host
before the first recording and after the last: a CUPTI left attached between recordings shows there (on
the H100, +46 % with the switch off, torch 2.11's default), in every timed call that follows; and what each
recording's start and stop took on the wall, a call's (the correctness recording) and the timing's: where
CUPTI is torn down at a stop, the next start attaches it again.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import os
import sys
import time
from collections.abc import Callable, Iterator

import torch
from rich.table import Table

from cudasmith.harness.workers import recording
from cudasmith.harness.workers.forward import _race, waits_read
from cudasmith.harness.workers.races.returned import ReturnMarker, unsynchronised
from cudasmith.harness.workers.races.streams import resolve
from cudasmith.harness.workers.recording import Observation
from cudasmith.report.formats import output_console
from cudasmith.timing import clock
from cudasmith.timing.activity import (
    ActivityRecorder,
    activity_kind,
    event_device_type,
    event_metadata,
    event_name,
)
from cudasmith.timing.teardown import teardowns

_split = recording.split_events
_last_events: list[object] = []


def _keep_events(events, cuda_device_type):  # type: ignore[no-untyped-def]
    """The recorder's split, the raw events kept for --raw."""
    _last_events[:] = list(events)
    return _split(_last_events, cuda_device_type)


recording.split_events = _keep_events


def _joined(x: torch.Tensor, side: torch.cuda.Stream) -> torch.Tensor:
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = torch.relu(x)
    torch.cuda.current_stream().wait_stream(side)
    return y


def _early(x: torch.Tensor, side: torch.cuda.Stream) -> torch.Tensor:
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = torch.relu(x)
    time.sleep(0.02)
    return y


def _self_wait(x: torch.Tensor, side: torch.cuda.Stream) -> torch.Tensor:
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = torch.relu(x)
        torch.cuda.current_stream().wait_stream(side)
    time.sleep(0.02)
    return y


def _caller_only(x: torch.Tensor, side: torch.cuda.Stream) -> torch.Tensor:
    return torch.relu(x)


def _graphed(x: torch.Tensor, side: torch.cuda.Stream) -> torch.Tensor:
    # torch.cuda.graph captures on a stream of its own, after torch's capture prologue (two int64 fills)
    # there, which nothing orders before the caller's stream: not the call's work (streams.capture_prologue).
    static = torch.empty_like(x)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static.copy_(torch.relu(x))
    graph.replay()
    return static


def _event_synced(x: torch.Tensor, side: torch.cuda.Stream) -> torch.Tensor:
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = torch.relu(x)
        done = torch.cuda.Event()
        done.record(side)
    done.synchronize()
    return y


# (name, the call, whether the graph must name a race)
PATTERNS: list[tuple[str, Callable[[torch.Tensor, torch.cuda.Stream], torch.Tensor], bool]] = [
    ("caller's stream only", _caller_only, False),
    ("side stream joined by a wait", _joined, False),
    ("side stream joined by an event's synchronisation", _event_synced, False),
    ("side stream ended early, never waited for", _early, True),
    ("self-wait inside torch.cuda.stream", _self_wait, True),
    ("CUDA graph captured in the call, replayed on the caller's", _graphed, False),
]
# Kernels launched in each recording of the timing sampler's kind taken after a pattern's call.
TIMED_KERNELS = 50


def timing_recording_whole(x: torch.Tensor) -> bool:
    """One recording of the timing sampler's kind (timing/activity.ActivityRecorder, as its chunks of
    samples are recorded) right after a call's recording stopped: whether it saw every kernel launched in it
    (a teardown of CUPTI that ends inside it loses them: "CUPTI saw N samples of M")."""
    with _costing("timing start"):
        recorder = ActivityRecorder()
    for _ in range(TIMED_KERNELS):
        x.mul_(1.0)
    torch.cuda.synchronize()
    with _costing("timing stop"):
        seen = recorder.stop()
    return len(seen) >= TIMED_KERNELS


# Wall seconds of each recording's start and stop, by kind: what the switch and its teardowns cost a call.
_costs: dict[str, list[float]] = {"call start": [], "call stop": [], "timing start": [], "timing stop": []}


@contextlib.contextmanager
def _costing(kind: str) -> Iterator[None]:
    """The wall time of what runs inside, kept under `kind` in _costs."""
    began = time.perf_counter()
    yield
    _costs[kind].append(time.perf_counter() - began)


def _median_ms(values: list[float]) -> str:
    return f"{sorted(values)[len(values) // 2] * 1e3:.1f}" if values else "-"


def launch_us(x: torch.Tensor, launches: int = 2000) -> float:
    """The host's microseconds per launch of a one-element kernel and a CUDA event's record, the median of
    five rounds (the timing loop's own steps: a launch, an event)."""
    rounds = []
    for _ in range(5):
        torch.cuda.synchronize()
        begin = time.perf_counter()
        for _ in range(launches):
            x.add_(1.0)
            torch.cuda.Event(enable_timing=True).record()
        torch.cuda.synchronize()
        rounds.append((time.perf_counter() - begin) / launches * 1e6)
    return sorted(rounds)[2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--raw", action="store_true", help="print every synchronisation and event record")
    parser.add_argument("--calls", type=int, default=3, help="calls of each pattern (default 3)")
    parser.add_argument("--hang-s", type=float, default=30.0, help="print the stacks and exit after this")
    args = parser.parse_args()
    faulthandler.dump_traceback_later(args.hang_s, exit=True)
    console = output_console()
    if not torch.cuda.is_available():
        console.print("stream_records: needs a GPU (the records are CUPTI's)")
        return 2
    console.print(
        f"torch {torch.__version__} on {torch.cuda.get_device_name()}; CUPTI's event records switched by the "
        f"judge: {'yes' if recording.SWITCH_EVENT_RECORDS else 'no'}; teardown policy: {teardowns.policy or '(none)'}; "
        f"TEARDOWN_CUPTI between stops={os.environ.get('TEARDOWN_CUPTI', '(unset)')}"
    )
    one = torch.zeros(1, device="cuda")
    launch_us(one, 200)  # the first launches pay the module's loading
    before_us = launch_us(one)
    marker = ReturnMarker()
    side = torch.cuda.Stream()
    x = torch.randn(1 << 20, device="cuda")
    table = Table(title="The happens-before graph on this torch, per pattern")
    for column in (
        "pattern",
        "call",
        "waits read",
        "graph",
        "marker",
        "expected",
        "timing whole",
        "as expected",
    ):
        table.add_column(column)
    wrong = 0
    for name, call, race_expected in PATTERNS:
        for number in range(args.calls):
            caller = torch.cuda.current_stream()
            mark = marker.bound(caller)
            observation = Observation(True)
            with _costing("call start"):
                observation.start()
            marker.canary(caller)
            call(x, side)
            mark()
            torch.cuda.synchronize()
            with _costing("call stop"):
                _, work, graphs, syncs = observation.stop()
            whole = timing_recording_whole(x)
            rest, returned = marker.split(work)
            graph = _race(rest, syncs, returned, waits_read(syncs), graphs)
            late = unsynchronised(rest, returned)
            resolved = resolve(syncs)
            read = sum(1 for op in resolved if op.kind != "cudaEvent" and op.recorded_at >= 0)
            waits = sum(1 for op in resolved if op.kind != "cudaEvent")
            named = graph is not None
            ok = named == race_expected and whole
            wrong += not ok
            table.add_row(
                name,
                str(number),
                f"{read}/{waits}",
                (graph or "no race")[:60],
                "late" if late else "-",
                "race" if race_expected else "no race",
                "yes" if whole else "NO",
                "yes" if ok else "NO",
            )
            if args.raw:
                marker_at = (returned.stream, returned.correlation) if returned else None
                console.print(f"[{name} #{number}] marker (stream, correlation): {marker_at}")
                for activity in rest:
                    console.print(
                        f"  work   {activity.name[:50]} stream {activity.stream} corr {activity.correlation}"
                    )
                kinds = sorted(
                    {
                        (activity_kind(e), event_name(e)[:40])  # type: ignore[arg-type]
                        for e in _last_events
                        if event_device_type(e) == clock.CUDA_DEVICE_TYPE  # type: ignore[arg-type]
                    }
                )
                console.print(f"  device records (kind, name): {kinds}")
                for e in _last_events:
                    if event_device_type(e) == clock.CUDA_DEVICE_TYPE and event_metadata is not None:  # type: ignore[arg-type]
                        name_of = event_name(e)  # type: ignore[arg-type]
                        if "Event" in name_of or "event" in name_of or "Sync" in name_of:
                            meta = " ".join(event_metadata(e).split())  # type: ignore[arg-type]
                            console.print(f"  raw {name_of}: {meta[:300]}")
                for op, got in zip(sorted(syncs, key=lambda o: o.correlation), resolved, strict=True):
                    console.print(
                        f"  {op.kind:<18} stream {op.stream} corr {op.correlation} event {op.event} "
                        f"kineto ({op.recorded_on}, {op.recorded_at}) read ({got.recorded_on}, {got.recorded_at})"
                    )
    after_us = launch_us(one)
    faulthandler.cancel_dump_traceback_later()
    console.print(table)
    console.print(
        f"{wrong} pattern call(s) read otherwise than expected, or a timing recording after them cut"
    )
    if teardowns.policy:
        waited = sorted(teardowns.waited_s)
        console.print(
            f"teardowns of CUPTI waited for: {len(waited)}"
            + (
                f", median {waited[len(waited) // 2] * 1e3:.1f} ms, most {waited[-1] * 1e3:.1f} ms"
                if waited
                else ""
            )
            + f"; not ended within their limit: {teardowns.unfinished}"
        )
    console.print(
        "wall ms of a recording's start and stop, median (most): "
        + "; ".join(
            f"{kind} {_median_ms(values)} ({max(values) * 1e3:.1f})"
            for kind, values in _costs.items()
            if values
        )
    )
    console.print(
        f"host cost of a launch and an event record: {before_us:.2f} us before the first recording, "
        f"{after_us:.2f} us after the last ({after_us / before_us - 1:+.1%})"
    )
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
