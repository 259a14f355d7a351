"""Stream mode of throughput.py: a stream of kernel variants, as a search judges them, through judge sessions
with K candidates in flight and through KernelBench's evaluator; then the interference check.

    python benchmarks/throughput.py --stream --kernelbench .kernelbench --in-flight 4    # on the GPU machine
    python benchmarks/throughput.py --stream --device cpu --candidates DIR --no-interference   # plumbing, CPU

--candidates DIR judges a stream of one's own instead (DIR/EXPECTED.json: file → expected status).

Steps, each row printed as soon as it is done, all within --budget-s (shares by ROW_WEIGHTS):
  1. The stream (stream_variants.py: NVRTC, Triton and load_inline variants of the tasks' kernels, a third
     wrong), written into the run's folder, task by task.
  2. Rows, each with compile caches of its own: KernelBench's evaluator (a process per candidate); a
     session with K = 1, with K at its default and with K = --in-flight (each task one session, which
     builds ahead as `cudasmith eval` of several solutions does: exec/ahead.py).
  3. The interference check: the batch's honest online softmax judged ALONE_COPIES times alone, then
     FLIGHT_COPIES times among the stream's softmax variants with K in flight, in one session; per config,
     its median time in flight against alone (target: within INTERFERENCE_LIMIT_PCT).
Per row: candidates judged, wall seconds, candidates per GPU-minute (over the row's wall time, session
start included) and its ratio to KernelBench's, GPU busy (NVML), the warm median seconds per candidate
(each candidate's time from its start to its verdict, the first of each task left out), and whether its
verdicts are the ones expected and the same as K = 1's. A session row's line also says how long each
extension build ahead took, from its worker's start: their candidates wait for them, so the longest is a
floor under the row's wall time (on the H100, nvcc over PyTorch's headers). Where this checkout has no
`in_flight` option, the K rows and the check say so in one line and run as they can.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol

from child_processes import run_process, tail
from rich.console import Console
from rich.table import Table
from stream_variants import write_stream
from throughput_report import UNJUDGED, WIDE_COLUMNS, Approach, Candidate, Result, kind_of

BATCH = Path(__file__).resolve().parent / "candidates"
# Shares of the budget left when a step starts. KernelBench's evaluator judges one candidate at a time and
# builds load_inline inside it: on the H100 it needs about 3x a session row's time for the whole stream
# (24 candidates, two load_inline builds of ~45 s each), and a row cut short compares other candidates.
ROW_WEIGHTS = {"kernelbench": 2.5, "session": 1.0, "interference": 1.0}
# The interference check: the honest kernel, its task, how often it is judged alone and in flight, and
# the limit on the difference of its times.
HONEST = "level1/softmax/cuda_online.py"
INTERFERENCE_TASK = "level1/softmax"
ALONE_COPIES = 2
FLIGHT_COPIES = 2
INTERFERENCE_LIMIT_PCT = 2.0
NO_IN_FLIGHT = "this checkout's EvalOptions has no in_flight (issue 21's concurrent sessions not merged yet)"
console = Console(stderr=True, highlight=False, markup=False)


class Runner(Protocol):
    """What stream mode uses of throughput.py's Runner."""

    args: argparse.Namespace
    sampler: Any
    workdir: Path

    def left(self) -> float: ...

    def env(self, label: str) -> dict[str, str]: ...

    def kernelbench(self, candidate: Candidate, env: dict[str, str], left_s: float) -> Result: ...


def in_flight_supported() -> bool:
    """Whether this checkout's judge sessions take `in_flight` (candidates judged at once)."""
    from cudasmith.harness.options import EvalOptions

    return "in_flight" in {item.name for item in fields(EvalOptions)}


def session_rows(requested: int | None, supported: bool) -> list[tuple[str, int | None]]:
    """(row name, K) of the session rows: K = 1, the default (None) and the one asked for."""
    rows: list[tuple[str, int | None]] = [("session K=1", 1)]
    if supported:
        rows.append(("session K=default", None))
        if requested is not None and requested != 1:
            rows.append((f"session K={requested}", requested))
    return rows


@dataclass
class Row:
    """One row of the stream table: an approach over the stream, and how it compares."""

    approach: Approach
    first_of_task: set[str] = field(default_factory=set)
    # Per candidate, what its verdict says of its timing windows (exclusive, retimed_windows, …).
    timing: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The candidates a session kept in flight, as it reported them.
    in_flight: int | None = None
    # Each candidate's progress lines in its session: (seconds since the stream began, what), in order.
    phases: dict[str, list[tuple[float, str]]] = field(default_factory=dict)
    # The row's own end, on the phases' clock: (seconds, task or "child", what), e.g. a session closed.
    marks: list[tuple[float, str, str]] = field(default_factory=list)
    # When the phases' clock started, in seconds after the child's process was started (its own start: the
    # interpreter, its imports, the builds sent ahead); None where the child did not say.
    clock_at_s: float | None = None
    # Per candidate whose windows were timed again, its verdict's notes saying which process shared them.
    retimed: dict[str, list[str]] = field(default_factory=dict)
    # Per candidate, each timed config's measurement: median, samples, stop, warmup_s, sampling_s, records_s.
    configs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # The extension builds sent ahead (load_inline and the like): task, candidate, seconds, whether it went.
    builds: list[dict[str, Any]] = field(default_factory=list)

    def config_costs(self) -> dict[str, Any]:
        """What timing one config of a candidate costs, as medians over the row: the whole step as the
        progress lines show it (from "timing <config>" to the candidate's next line: hold, settling,
        measurement, the re-checks of timed outputs), and the measurement's own parts."""
        steps = [
            later[0] - step[0]
            for lines in self.phases.values()
            for step, later in itertools.pairwise(lines)
            if step[1].startswith("timing ") and not step[1].startswith("timing eager")
        ]
        measured = [c for configs in self.configs.values() for c in configs]
        parts = {
            key: statistics.median(c[key] for c in measured if key in c) if any(key in c for c in measured) else None
            for key in ("warmup_s", "sampling_s", "records_s")
        }  # fmt: skip
        return {"step_s": statistics.median(steps) if steps else None, "steps": len(steps), **parts}

    def unfinished(self) -> list[str]:
        """A line per candidate that began but got no verdict: what it was doing last, and since when."""
        judged = self.approach.judged()
        return [
            f"{name}: {steps[-1][1]} (since {steps[-1][0]:.1f} s)"
            for name, steps in self.phases.items()
            if name not in judged and steps
        ]

    def summary(self, batch: list[Candidate], kernelbench_rate: float | None) -> dict[str, Any]:
        """The row's figures: the approach's, the warm median and the verdicts' agreement."""
        found = self.approach.summary()
        judged = self.approach.judged()
        warm = [r.seconds for n, r in judged.items() if n not in self.first_of_task and r.seconds is not None]
        rate = found["candidates_per_gpu_minute"]
        wrong = [c.name for c in batch if c.name in judged and judged[c.name].status != c.expected]
        exclusive = [t["exclusive"] for t in self.timing.values() if "exclusive" in t]
        return {
            "in_flight": self.in_flight,
            **found,
            "vs_kernelbench": rate / kernelbench_rate if rate and kernelbench_rate else None,
            "warm_median_s": statistics.median(warm) if warm else None,
            "wall_per_candidate_s": self.approach.wall_s / found["judged"] if found["judged"] else None,
            "unexpected": wrong,
            "exclusive_windows": f"{sum(bool(e) for e in exclusive)}/{len(exclusive)}" if exclusive else None,
            "retimed_windows": sum(t.get("retimed_windows", 0) for t in self.timing.values()),
            "retimed_why": self.retimed,
            # What the candidates' timing holds waited for before timing, summed over the row (seconds).
            "hold_waits_s": {
                key: round(sum(t.get(key) or 0.0 for t in self.timing.values()), 3)
                for key in ("drain_s", "pause_s", "settle_s")
            },
            "no_verdict": self.unfinished(),
            "phases": self.phases,
            "marks": self.marks,
            "extension_builds": self.builds,
            **self.ends(),
            "config_costs": self.config_costs(),
        }

    def ends(self) -> dict[str, float | None]:
        """The row's time outside its sessions (seconds): the child's start, before the phases' clock, and
        its exit, after its last mark, both on the row's wall clock."""
        if self.clock_at_s is None:
            return {"child_start_s": None, "child_exit_s": None}
        last = max((t for t, _, _ in self.marks), default=None)
        exit_s = self.approach.wall_s - self.clock_at_s - last if last is not None else None
        return {"child_start_s": round(self.clock_at_s, 3), "child_exit_s": exit_s and round(exit_s, 3)}


def firsts(batch: list[Candidate]) -> set[str]:
    """The first candidate of each task: the one that pays for starting its session, left out of warm times."""
    return {next(c.name for c in batch if c.task == task) for task in {c.task for c in batch}}


def _child(runner: Runner, mode: str, extra: list[str], names: list[str]) -> list[str]:
    """The command line of a child of throughput.py in stream mode."""
    args = runner.args
    command = [sys.executable, str(Path(__file__).resolve().parent / "throughput.py"), mode]
    command += ["--device", args.device, "--baselines", args.baselines, "--candidates", str(args.stream_dir)]
    return command + extra + names


def run_session_row(
    runner: Runner, name: str, in_flight: int | None, batch: list[Candidate], share_s: float
) -> Row:
    """One session row: a child judges the stream, task by task, and prints a JSON line per verdict."""
    row = Row(Approach(name), firsts(batch))
    row.approach.results = {c.name: Result("not reached") for c in batch}
    extra = [] if in_flight is None else ["--in-flight", str(in_flight)]

    def on_event(line: str) -> None:
        try:
            event = json.loads(line)
        except ValueError:  # the child writes only JSON lines there; anything else is not an event
            return
        if event["event"] == "candidate":
            result = Result(event["status"], event["seconds"], event["reason"], event.get("speedup"))
            row.approach.results[event["name"]] = result
            row.timing[event["name"]] = event.get("timing") or {}
            row.configs[event["name"]] = event.get("configs") or []
            if event.get("retimed"):
                row.retimed[event["name"]] = event["retimed"]
            console.print(
                f"[{name}] {event['name']}: {result.status} ({result.seconds or 0:.1f} s) {result.reason[:100]}"
            )
        elif event["event"] == "phase":
            row.phases.setdefault(event["name"], []).append((event["t"], event["what"]))
        elif event["event"] == "mark":
            row.marks.append((event["t"], event["who"], event["what"]))
        elif event["event"] == "build":
            row.builds.append({key: event[key] for key in ("task", "name", "seconds", "ok")})
        elif event["event"] == "clock":  # the phases' clock started: CLOCK_MONOTONIC, as this process's
            row.clock_at_s = event["at"] - began
        elif event["event"] == "setup":
            row.approach.setup_s[event["task"]] = event["seconds"]
            row.in_flight = event.get("in_flight")

    began = time.monotonic()
    command = _child(runner, "--child-stream", extra, [c.name for c in batch])
    rc, _, err, _ = run_process(command, runner.env(name.replace(" ", "_")), share_s, on_event)
    _finish(runner, row.approach, began, rc, err)
    for line in row.unfinished():
        console.print(f"[{name}] no verdict: {line}")
    return row


def run_kernelbench_row(runner: Runner, batch: list[Candidate], share_s: float) -> Row:
    """KernelBench's evaluator, a process per candidate, over the stream."""
    row = Row(Approach("kernelbench"), firsts(batch))
    row.approach.results = {c.name: Result("not reached") for c in batch}
    began = time.monotonic()
    deadline, env = began + share_s, runner.env("kernelbench")
    for candidate in batch:
        if time.monotonic() >= deadline:
            break
        result = runner.kernelbench(candidate, env, deadline - time.monotonic())
        row.approach.results[candidate.name] = result
        console.print(
            f"[kernelbench] {candidate.name}: {result.status} ({result.seconds or 0:.1f} s) {result.reason[:100]}"
        )
    _finish(runner, row.approach, began, 0, "")
    return row


def _finish(runner: Runner, approach: Approach, began: float, rc: int | None, err: str) -> None:
    approach.wall_s = time.monotonic() - began
    if runner.sampler is not None:
        approach.busy_fraction = runner.sampler.fraction(began, time.monotonic())
    if rc is None:
        approach.note = "stopped at the end of its share of the budget"
    elif rc != 0:
        approach.note = f"the child failed, exit code {rc}: {tail(err, 3)}"


def run_interference(
    runner: Runner, batch: list[Candidate], in_flight: int | None, share_s: float
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
        _child(runner, "--child-interference", extra, busy), runner.env("interference"), share_s, on_event
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


def _fmt(value: float | None, spec: str, unit: str = "") -> str:
    return "–" if value is None else format(value, spec) + unit


def partial_note(judged: int, total: int) -> str | None:
    """What a ratio to KernelBench's rate is worth when its row judged only part of the stream (None: all)."""
    if judged >= total:
        return None
    return (
        f"* KernelBench judged {judged} of the stream's {total} candidates in its share of the budget: its rate "
        "is over those, the sessions' over theirs; the ratio compares different candidates (give --budget-s "
        "more for the same ones)"
    )


def _vs_kernelbench(summary: dict[str, Any], document: dict[str, Any]) -> str:
    """A row's ratio to KernelBench's rate, marked when KernelBench's row judged only part of the stream."""
    ratio = summary["vs_kernelbench"]
    mark = "*" if ratio is not None and "kernelbench_partial" in document else ""
    return _fmt(ratio, ".2f", "x") + mark


def build_line(builds: list[dict[str, Any]]) -> str:
    """The extension builds sent ahead, as a clause of a row's line: their candidates wait for them."""
    if not builds:
        return ""
    each = ", ".join(f"{b['seconds']:.1f} s" + ("" if b["ok"] else " (failed)") for b in builds)
    return f"; extension builds ahead took {each} (sent at the child's start; their candidates wait for them)"


def row_line(row: Row, document: dict[str, Any]) -> str:
    """A row as one line, printed as soon as the row is done."""
    s = document["rows"][row.approach.name]
    verdicts = "as expected" if not s["unexpected"] else f"{len(s['unexpected'])} unexpected"
    k = f" (K={s['in_flight']})" if s["in_flight"] is not None and "default" in row.approach.name else ""
    return (
        f"{row.approach.name}{k}: {s['judged']} judged in {s['wall_s']:.0f} s, {_fmt(s['candidates_per_gpu_minute'], '.1f')} "
        f"per GPU-minute ({_vs_kernelbench(s, document)} KernelBench's), GPU busy "
        f"{_fmt(s['busy_fraction'] and s['busy_fraction'] * 100, '.0f', ' %')}, warm median "
        f"{_fmt(s['warm_median_s'], '.2f', ' s')}, verdicts {verdicts}"
        + (
            f", exclusive {s['exclusive_windows']}, {s['retimed_windows']} retimed"
            + ", holds waited {drain_s:.1f} s for steps, {pause_s:.1f} s for pauses, {settle_s:.1f} s to settle".format(
                **s["hold_waits_s"]
            )
            if s["exclusive_windows"]
            else ""
        )
        + config_cost_line(s["config_costs"])
        + build_line(s.get("extension_builds") or [])
        + (
            f"; the child's start took {s['child_start_s']:.1f} s, its exit {_fmt(s['child_exit_s'], '.1f', ' s')}"
            if s.get("child_start_s") is not None
            else ""
        )
        + (f" ({row.approach.note})" if row.approach.note else "")
    )


def config_cost_line(costs: dict[str, Any]) -> str:
    """What timing one config cost (issue 21's target: at most 0.3 s for a config under 1 ms)."""
    if not costs.get("steps"):
        return ""
    parts = ", ".join(
        f"{label} {_fmt(costs.get(key), '.2f', ' s')}"
        for label, key in (("warm-up", "warmup_s"), ("sampling", "sampling_s"), ("records", "records_s"))
    )
    return f"; timing a config took {_fmt(costs['step_s'], '.2f', ' s')} (median of {costs['steps']}; measurement: {parts})"


def disagreements(rows: list[Row], batch: list[Candidate]) -> list[str]:
    """Session rows whose verdict on a candidate differs from K = 1's: being in flight changed a verdict."""
    sessions = [row for row in rows if row.approach.name.startswith("session")]
    if len(sessions) < 2:
        return []
    first, found = sessions[0].approach.results, []
    for row in sessions[1:]:
        for candidate in batch:
            one, other = first[candidate.name].status, row.approach.results[candidate.name].status
            if one not in UNJUDGED and other not in UNJUDGED and one != other:
                found.append(f"{row.approach.name}: {candidate.name} {other}, K=1 said {one}")
    return found


def print_table(rows: list[Row], document: dict[str, Any]) -> None:
    out = Console(highlight=False, width=None if sys.stdout.isatty() else WIDE_COLUMNS)
    table = Table(title=f"Stream throughput on {document['versions']['device']}", show_edge=False)
    columns = ("row", "judged", "wall s", "per GPU-min", "vs KernelBench", "GPU busy", "warm median s")
    columns += ("wall s/candidate", "verdicts")
    for column in columns:
        table.add_column(column, justify="left" if column in ("row", "verdicts") else "right")
    for row in rows:
        s = document["rows"][row.approach.name]
        verdicts = "expected" if not s["unexpected"] else f"{len(s['unexpected'])} unexpected"
        busy = s["busy_fraction"] and s["busy_fraction"] * 100
        cells = [row.approach.name, str(s["judged"]), _fmt(s["wall_s"], ".0f")]
        cells += [_fmt(s["candidates_per_gpu_minute"], ".1f"), _vs_kernelbench(s, document)]
        cells += [
            _fmt(busy, ".0f", "%"),
            _fmt(s["warm_median_s"], ".2f"),
            _fmt(s["wall_per_candidate_s"], ".2f"),
        ]
        table.add_row(*cells, verdicts)
    out.print(table)
    for line in document["lines"]:
        out.print(line)


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


def run_stream(args: argparse.Namespace, runner: Runner, document: dict[str, Any]) -> int:
    """Stream mode's steps; the document gets every number. Exit code 1 when a session's verdict is not
    the expected one or differs between K values."""
    tasks = tuple(args.tasks.split(",")) if args.tasks else None
    if args.candidates is not None:  # a stream of the user's own, listed in its EXPECTED.json
        args.stream_dir = args.candidates.resolve()
        expected = json.loads((args.stream_dir / "EXPECTED.json").read_text())
        expected = {n: s for n, s in expected.items() if tasks is None or str(Path(n).parent) in tasks}
    else:
        args.stream_dir = runner.workdir / "stream"
        expected = write_stream(args.stream_dir, *((tasks,) if tasks else ()), per_task=args.stream_per_task)
    batch = [
        Candidate(
            name,
            args.stream_dir / name,
            str(Path(name).parent),
            status,
            kind_of((args.stream_dir / name).read_text()),
        )
        for name, status in expected.items()
    ]
    supported = in_flight_supported()
    notes = document["notes"]
    if not supported:
        notes.append(f"in-flight rows and the interference check at K=1 only: {NO_IN_FLIGHT}")
    steps: list[tuple[str, Callable[[float], Any]]] = []
    if args.kernelbench is not None and args.device == "cuda":
        steps.append(("kernelbench", lambda share: run_kernelbench_row(runner, batch, share)))
    else:
        notes.append("kernelbench left out: it needs --kernelbench DIR and a CUDA GPU")
    for name, k in session_rows(args.in_flight, supported):
        steps.append(
            ("session", lambda share, name=name, k=k: run_session_row(runner, name, k, batch, share))
        )
    if not args.no_interference:
        k = args.in_flight if supported else None
        steps.append(("interference", lambda share, k=k: run_interference(runner, batch, k, share)))
    rows: list[Row] = []
    document["rows"], kernelbench_rate = {}, None
    console.print(f"[stream] {len(batch)} variants of {', '.join(sorted({c.task for c in batch}))}")
    for index, (kind, step) in enumerate(steps):
        weights = [ROW_WEIGHTS[k] for k, _ in steps[index:]]
        share = max(runner.left(), 0.0) * ROW_WEIGHTS[kind] / sum(weights)
        found = step(share)
        if kind == "interference":
            document["interference"] = found
            print(interference_line(found), flush=True)
            continue
        rows.append(found)
        document["rows"][found.approach.name] = found.summary(batch, kernelbench_rate)
        document["rows"][found.approach.name]["results"] = {
            n: asdict(r) for n, r in found.approach.results.items()
        }
        if found.approach.name == "kernelbench":
            kernelbench_rate = document["rows"]["kernelbench"]["candidates_per_gpu_minute"]
            if (partial := partial_note(document["rows"]["kernelbench"]["judged"], len(batch))) is not None:
                document["kernelbench_partial"] = partial
        print(row_line(found, document), flush=True)
    sessions = [r for r in rows if r.approach.name.startswith("session")]
    errors = [
        f"{r.approach.name}: {n} expected {expected[n]}, judged {r.approach.results[n].status}"
        for r in sessions
        for n in document["rows"][r.approach.name]["unexpected"]
    ]
    errors += disagreements(rows, batch)
    document["judge_errors"] = errors
    document["lines"] = [
        *([interference_line(document["interference"])] if "interference" in document else []),
        *([document["kernelbench_partial"]] if "kernelbench_partial" in document else []),
        "warm median: each candidate's own time from its start to its verdict, the first of each task left out;",
        "wall s/candidate: the row's wall time over the candidates it judged (what throughput pays).",
        *(f"note: {n}" for n in notes),
        *(f"JUDGE ERROR {e}" for e in errors),
    ]
    print_table(rows, document)
    return 1 if errors else 0
