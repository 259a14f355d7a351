"""The interference check of throughput.py's stream mode: does an honest kernel's time change when other
candidates are in flight beside it? The batch's online softmax is judged ALONE_COPIES times alone, then
FLIGHT_COPIES times among the stream's softmax variants with K in flight, in one session (a child process,
stream_children.child_interference); per config, its median time in flight against alone (target: within
INTERFERENCE_LIMIT_PCT)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from child_processes import child_command, run_process, tail
from rich.console import Console
from throughput_report import Candidate

# The honest kernel, its task, how often it is judged alone and in flight, and the limit on the
# difference of its times.
HONEST = "level1/softmax/cuda_online.py"
INTERFERENCE_TASK = "level1/softmax"
ALONE_COPIES = 2
FLIGHT_COPIES = 2
INTERFERENCE_LIMIT_PCT = 2.0
console = Console(stderr=True, highlight=False, markup=False)


def run_interference(
    runner: Any, batch: list[Candidate], in_flight: int | None, share_s: float, folder: Path
) -> dict[str, Any]:
    """The interference check in a child: the honest kernel's times alone and with K in flight."""
    busy = [c.name for c in batch if c.task == INTERFERENCE_TASK and c.kind != "load_inline"]
    if not busy:
        return {"notes": [f"no {INTERFERENCE_TASK} variants in the stream to keep in flight"], "k": in_flight}
    extra = [] if in_flight is None else ["--in-flight", str(in_flight)]
    found: dict[str, Any] = {"alone": [], "in_flight": [], "k": in_flight, "notes": []}

    def on_event(line: str) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            return
        if event["event"] == "honest":
            found[event["role"]].append(event)
            times = ", ".join("–" if t is None else f"{t * 1e3:.2f}" for t in event["times_ms"])
            console.print(
                f"[interference] honest kernel {event['role']}: {event['status']}, µs per config {times}"
            )
        elif event["event"] == "note":
            found["notes"].append(event["text"])

    rc, _, err, _ = run_process(
        child_command(runner.args, folder, "--child-interference", extra, busy),
        runner.env("interference"),
        share_s,
        on_event,
    )
    if rc is None:
        found["notes"].append("stopped at the end of its share of the budget")
    elif rc != 0:
        found["notes"].append(f"the child failed, exit code {rc}: {tail(err, 3)}")
    found.update(compare_times(found["alone"], found["in_flight"]))
    return found


def compare_times(alone: list[dict[str, Any]], flight: list[dict[str, Any]]) -> dict[str, Any]:
    """Per config, the median time in flight against alone, in per cent; the worst and the verdict."""
    deltas = []
    for index in range(min((len(e["times_ms"]) for e in alone + flight), default=0)):
        before = [e["times_ms"][index] for e in alone if e["times_ms"][index]]
        during = [e["times_ms"][index] for e in flight if e["times_ms"][index]]
        if before and during:
            deltas.append((statistics.median(during) / statistics.median(before) - 1) * 100)
    worst = max(deltas, key=abs) if deltas else None
    return {
        "delta_pct": deltas,
        "worst_pct": worst,
        "passed": worst is not None and abs(worst) <= INTERFERENCE_LIMIT_PCT,
    }


def interference_line(found: dict[str, Any]) -> str:
    """The interference check's outcome in one line."""
    notes = "; ".join(found.get("notes", []))
    if found.get("worst_pct") is None:
        return f"interference check: not measured ({notes or 'no times'})"
    k = "default" if found["k"] is None else found["k"]
    deltas = ", ".join(f"{d:+.2f} %" for d in found["delta_pct"])
    verdict = "PASS" if found["passed"] else "FAIL"
    note = f" ({notes})" if notes else ""
    return (
        f"interference check (K={k}): {verdict}, honest kernel in flight vs alone per config {deltas} "
        f"(limit ±{INTERFERENCE_LIMIT_PCT:.0f} %){note}"
    )
