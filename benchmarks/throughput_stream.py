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
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol

import stream_figures as figures
from child_processes import child_command, run_process, tail
from rich.console import Console
from stream_interference import interference_line, run_interference
from stream_report import (
    BOUND_MEANING,
    STEADY_MEANING,
    disagreements,
    partial_note,
    print_table,
    print_wall_table,
    row_line,
)
from stream_variants import write_kind
from throughput_report import Approach, Candidate, Result, kind_of

BATCH = Path(__file__).resolve().parent / "candidates"
# Shares of the budget left when a step starts. KernelBench's evaluator judges one candidate at a time and
# builds load_inline inside it: on the H100 it needs about 3x a session row's time for the whole stream
# (24 candidates, two load_inline builds of ~45 s each), and a row cut short compares other candidates.
ROW_WEIGHTS = {"kernelbench": 2.5, "session": 1.0, "interference": 1.0}
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


def session_rows(
    requested: int | None, supported: bool, chosen: list[str] | None = None
) -> list[tuple[str, int | None]]:
    """(row name, K) of the session rows: K = 1, the default (None) and the one asked for; or those
    `chosen` names (--session-rows: "1", "default", a number)."""
    if chosen is not None:
        wanted = [None if k == "default" else int(k) for k in chosen]
        rows = [(f"session K={'default' if k is None else k}", k) for k in wanted]
        return [(name, k) for name, k in rows if supported or k == 1]
    rows = [("session K=1", 1)]
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
    # When each verdict came, in seconds on the row's clock (since its start).
    done_at: dict[str, float] = field(default_factory=dict)
    # Every hold of the device (candidate or None for a session's own, granted and released, phases' clock).
    holds: list[tuple[str | None, float, float]] = field(default_factory=list)
    # The lease's tally of the row's holds (harness/lease.py: LeaseTally), and each task's session start.
    tally: dict[str, float] = field(default_factory=dict)
    startup: dict[str, dict[str, float]] = field(default_factory=dict)

    def figures(self, batch: list[Candidate]) -> dict[str, Any]:
        """The row's steady state, bound, wall-time breakdown and config costs (stream_figures.py)."""
        task_of = {c.name: c.task for c in batch}
        judged = self.approach.judged()
        done = {n: at for n, at in self.done_at.items() if n in judged}
        steady = figures.steady_state(done, task_of)
        found: dict[str, Any] = {"steady": asdict(steady), "startup": self.startup}
        if self.tally:
            bound = figures.Bound(self.tally["request_s"], self.approach.wall_s, len(judged))
            found["bound"] = {**asdict(bound), "per_minute": bound.per_minute, "share": bound.share}
            begin = max(done.values(), default=0.0) - steady.window_s
            later = [n for n, at in done.items() if at > begin]
            exclusive = sum(self.timing.get(n, {}).get("requests_s") or 0.0 for n in later)
            found["steady_share"] = exclusive / steady.window_s if steady.window_s > 0 else None
            found["tally"] = self.tally
        if self.clock_at_s is not None:
            timeline = figures.Timeline(self.approach.wall_s)
            held = {name: (begin, end) for name, begin, end in self.holds if name is not None}
            for name, lines in self.phases.items():
                at = self.done_at.get(name)
                figures.candidate_intervals(
                    timeline,
                    lines,
                    self.clock_at_s,
                    None if at is None else at - self.clock_at_s,
                    held.get(name),
                )
            for name, begin, end in self.holds:
                if name is None:
                    timeline.add("holds", begin + self.clock_at_s, end + self.clock_at_s)
            found["wall_s_by_phase"] = figures.wall_breakdown(timeline)
        measured = [c for configs in self.configs.values() for c in configs]
        found["config_parts"] = figures.config_parts(measured)
        found["hold_parts"] = figures.hold_parts(list(self.timing.values()))
        found["timed_configs"] = len(measured)
        return found

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

    def summary(
        self, batch: list[Candidate], kernelbench_rate: float | None, kernelbench_steady: float | None = None
    ) -> dict[str, Any]:
        """The row's figures: the approach's, the warm median, the verdicts' agreement, and the steady state,
        bound and wall time of stream_figures.py (against KernelBench's rates, whole and steady)."""
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
            **(found_figures := self.figures(batch)),
            "steady_vs_kernelbench": _ratio(found_figures["steady"]["per_minute"], kernelbench_steady),
        }

    def ends(self) -> dict[str, float | None]:
        """The row's time outside its sessions (seconds): the child's start, before the phases' clock, and
        its exit, after its last mark, both on the row's wall clock."""
        if self.clock_at_s is None:
            return {"child_start_s": None, "child_exit_s": None}
        last = max((t for t, _, _ in self.marks), default=None)
        exit_s = self.approach.wall_s - self.clock_at_s - last if last is not None else None
        return {"child_start_s": round(self.clock_at_s, 3), "child_exit_s": exit_s and round(exit_s, 3)}


def _ratio(mine: float | None, theirs: float | None) -> float | None:
    return mine / theirs if mine and theirs else None


def firsts(batch: list[Candidate]) -> set[str]:
    """The first candidate of each task: the one that pays for starting its session, left out of warm times."""
    return {next(c.name for c in batch if c.task == task) for task in {c.task for c in batch}}


def run_session_row(
    runner: Runner, name: str, in_flight: int | None, batch: list[Candidate], share_s: float, folder: Path
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
            if event.get("t") is not None and row.clock_at_s is not None:
                row.done_at[event["name"]] = row.clock_at_s + event["t"]
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
        elif event["event"] == "hold":
            row.holds.append((event["name"], event["begin"], event["end"]))
        elif event["event"] == "tally":
            row.tally = {key: value for key, value in event.items() if key != "event"}
        elif event["event"] == "startup":
            row.startup[event["task"]] = event["marks"]
        elif event["event"] == "build":
            row.builds.append({key: event[key] for key in ("task", "name", "seconds", "ok")})
        elif event["event"] == "clock":  # the phases' clock started: CLOCK_MONOTONIC, as this process's
            row.clock_at_s = event["at"] - began
        elif event["event"] == "setup":
            row.approach.setup_s[event["task"]] = event["seconds"]
            row.in_flight = event.get("in_flight")

    began = time.monotonic()
    command = child_command(runner.args, folder, "--child-stream", extra, [c.name for c in batch])
    rc, _, err, _ = run_process(command, runner.env(name.replace(" ", "_")), share_s, on_event)
    _finish(runner, row.approach, began, rc, err)
    for line in row.unfinished():
        console.print(f"[{name}] no verdict: {line}")
    return row


def spread(batch: list[Candidate]) -> list[Candidate]:
    """The stream in an order whose every beginning is a fair sample of it: each kind of kernel (nvrtc,
    triton, load_inline) spread evenly through the order, and each place of a kind given to the task
    furthest behind its share so far (in stream order within a task)."""
    kinds: dict[str, int] = Counter(c.kind for c in batch)
    slots = sorted(((i + 0.5) / count, kind) for kind, count in kinds.items() for i in range(count))
    totals = Counter(c.task for c in batch)
    picked: Counter[str] = Counter()
    left = {kind: [c for c in batch if c.kind == kind] for kind in kinds}
    tasks = list(dict.fromkeys(c.task for c in batch))
    order = []
    for _, kind in slots:
        behind = min(
            (t for t in tasks if any(c.task == t for c in left[kind])),
            key=lambda t: (picked[t] / totals[t], tasks.index(t)),
        )
        chosen = next(c for c in left[kind] if c.task == behind)
        left[kind].remove(chosen)
        picked[behind] += 1
        order.append(chosen)
    return order


def run_kernelbench_row(
    runner: Runner, batch: list[Candidate], share_s: float, name: str = "kernelbench"
) -> Row:
    """KernelBench's evaluator, a process per candidate, over the stream (a fair sample of it, `spread`,
    when its share of the budget runs out first)."""
    row = Row(Approach(name), firsts(batch))
    label = name.replace(" ", "_")
    row.approach.results = {c.name: Result("not reached") for c in batch}
    began = time.monotonic()
    deadline, env = began + share_s, runner.env(label)
    for candidate in spread(batch):  # a row cut short by its share judged a sample of the whole stream
        if time.monotonic() >= deadline:
            break
        result = runner.kernelbench(candidate, env, deadline - time.monotonic())
        row.approach.results[candidate.name] = result
        row.done_at[candidate.name] = time.monotonic() - began
        console.print(
            f"[{name}] {candidate.name}: {result.status} ({result.seconds or 0:.1f} s) {result.reason[:100]}"
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


def stream_batch(
    args: argparse.Namespace, runner: Runner, kind: str
) -> tuple[Path, dict[str, str], list[Candidate]]:
    """A stream's folder, expected verdicts and candidates: --candidates DIR's, else the kind's, written
    into the run's folder (stream_variants.py, stream_nobuild.py)."""
    tasks = tuple(args.tasks.split(",")) if args.tasks else None
    if args.candidates is not None:  # a stream of the user's own, listed in its EXPECTED.json
        folder = args.candidates.resolve()
        expected = json.loads((folder / "EXPECTED.json").read_text())
        expected = {n: s for n, s in expected.items() if tasks is None or str(Path(n).parent) in tasks}
    else:
        folder = runner.workdir / f"stream-{kind}"
        expected = write_kind(folder, kind, tasks, args.stream_per_task)
    batch = [
        Candidate(name, folder / name, str(Path(name).parent), status, kind_of((folder / name).read_text()))
        for name, status in expected.items()
    ]
    return folder, expected, batch


def run_stream(args: argparse.Namespace, runner: Runner, document: dict[str, Any]) -> int:
    """Stream mode's steps, for each kind of stream asked for (--stream-kind); the document gets every
    number. Exit code 1 when a session's verdict is not the expected one or differs between K values."""
    supported = in_flight_supported()
    notes = document["notes"]
    if not supported:
        notes.append(f"in-flight rows and the interference check at K=1 only: {NO_IN_FLIGHT}")
    kinds = args.stream_kinds
    streams = {kind: stream_batch(args, runner, kind) for kind in kinds}
    steps: list[tuple[str, str, Callable[[float], Any]]] = []
    with_kernelbench = args.kernelbench is not None and args.device == "cuda"
    if not with_kernelbench:
        notes.append("kernelbench left out: it needs --kernelbench DIR and a CUDA GPU")
    for kind, (folder, _, batch) in streams.items():
        prefix = f"{kind} " if len(kinds) > 1 else ""
        if with_kernelbench:
            steps.append(
                (
                    "kernelbench",
                    kind,
                    lambda share, b=batch, n=prefix + "kernelbench": run_kernelbench_row(runner, b, share, n),
                )
            )
        for name, k in session_rows(args.in_flight, supported, args.session_rows):
            steps.append(
                (
                    "session",
                    kind,
                    lambda share, n=prefix + name, k=k, b=batch, f=folder: run_session_row(
                        runner, n, k, b, share, f
                    ),
                )
            )
    if not args.no_interference:
        folder, _, batch = streams[kinds[0]]
        k = args.in_flight if supported else None
        steps.append(
            (
                "interference",
                kinds[0],
                lambda share, k=k, b=batch, f=folder: run_interference(runner, b, k, share, f),
            )
        )
    rows: dict[str, list[Row]] = {kind: [] for kind in kinds}
    document["rows"], rates, steady_rates = {}, dict.fromkeys(kinds), dict.fromkeys(kinds)
    for kind, (_, _, batch) in streams.items():
        console.print(
            f"[stream] {kind}: {len(batch)} variants of {', '.join(sorted({c.task for c in batch}))}"
        )
    for index, (step_kind, kind, step) in enumerate(steps):
        weights = [args.row_weights[k] for k, _, _ in steps[index:]]
        share = max(runner.left(), 0.0) * args.row_weights[step_kind] / sum(weights)
        found = step(share)
        if step_kind == "interference":
            document["interference"] = found
            print(interference_line(found), flush=True)
            continue
        batch = streams[kind][2]
        rows[kind].append(found)
        summary = document["rows"][found.approach.name] = found.summary(
            batch, rates[kind], steady_rates[kind]
        )
        summary["stream"] = kind
        summary["results"] = {n: asdict(r) for n, r in found.approach.results.items()}
        if step_kind == "kernelbench":
            rates[kind], steady_rates[kind] = (
                summary["candidates_per_gpu_minute"],
                summary["steady"]["per_minute"],
            )
            if (partial := partial_note(summary["judged"], len(batch))) is not None:
                document.setdefault("kernelbench_partial_of", {})[kind] = partial
                if len(kinds) == 1:
                    document["kernelbench_partial"] = partial
        summary["kernelbench_partial"] = kind in document.get("kernelbench_partial_of", {})
        print(row_line(found, document), flush=True)
        if found.approach.name.endswith("K=default") and summary.get("wall_s_by_phase"):
            print_wall_table(found.approach.name, summary)
    errors = []
    for kind, (_, expected, batch) in streams.items():
        sessions = [r for r in rows[kind] if "session" in r.approach.name]
        errors += [
            f"{r.approach.name}: {n} expected {expected[n]}, judged {r.approach.results[n].status}"
            for r in sessions
            for n in document["rows"][r.approach.name]["unexpected"]
        ]
        errors += disagreements(rows[kind], batch)
    document["judge_errors"] = errors
    document["lines"] = [
        *([interference_line(document["interference"])] if "interference" in document else []),
        *document.get("kernelbench_partial_of", {}).values(),
        "warm median: each candidate's own time from its start to its verdict, the first of each task left out;",
        "wall s/candidate: the row's wall time over the candidates it judged (what throughput pays);",
        STEADY_MEANING,
        BOUND_MEANING,
        *(f"note: {n}" for n in notes),
        *(f"JUDGE ERROR {e}" for e in errors),
    ]
    print_table([row for kind in kinds for row in rows[kind]], document)
    return 1 if errors else 0
