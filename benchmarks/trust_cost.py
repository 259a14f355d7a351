"""What the parent's own witnesses cost: its clock around each timed request and the frozen re-check of timed
outputs (issue 44), seconds per candidate in a warm session, with and without them, side by side in one run.

    python benchmarks/trust_cost.py [--device cpu|cuda] [--repeats 3]

Candidates alternate in one warm session. "Without" patches them out of this process (the parent) for that
candidate: no reading of /proc around a timed request, the re-check's outputs read without stopping the
worker, and the worker asked to keep 20 timed calls' outputs instead of every one (as the judge did before).
What stays in both: the timed calls' own thread on the CPU, the budgets counted in CPU time (the worker's
protocol), and each worker's calibration, made ahead of need (its own time is printed below the table). The
table also says where each candidate's hold went: waiting for steps (drain), pausing the others, settling
NVML, and the frozen re-checks (stopping the worker, the judge's worker reading and comparing, resuming it).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from rich.table import Table

import cudasmith
from cudasmith.harness import timed
from cudasmith.harness.walls.process import WorkerProcess
from cudasmith.harness.wire.messages import Calibrate, Ping, Prepare, WorkerSetup
from cudasmith.harness.witnesses import rechecks
from cudasmith.harness.witnesses.bracket import Reading, calibration_plan
from cudasmith.report.formats import output_console
from cudasmith.tasks.lookup import find_problem
from cudasmith.timing.protocol import default_plan

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "cpu": [
        ("examples/softmax_cpu.py", "level1/softmax"),
        ("tests/exploits/solutions/honest_relu.py", "level1/relu"),
    ],
    "cuda": [
        ("examples/softmax_cuda.py", "level1/softmax"),
        ("examples/softmax_triton.py", "level1/softmax"),
        ("tests/exploits/solutions/gpu_honest_relu.py", "level1/relu"),
    ],
}


class _NoBracket:
    """A bracket that reads nothing (the parent's clock patched out)."""

    def __init__(self, *args: Any) -> None:
        self._started = time.monotonic()

    def stop(self) -> Reading:
        return Reading(time.monotonic() - self._started, None, None)


@contextlib.contextmanager
def _patched(pairs: list[tuple[Any, str, Any]]) -> Iterator[None]:
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in pairs]
    for owner, name, value in pairs:
        setattr(owner, name, value)
    try:
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


def _without() -> list[tuple[Any, str, Any]]:
    """The patches that take the parent's clock and the frozen read out of one candidate's judging."""
    spec_of = timed.time_spec

    def twenty_kept(view: Any, index: int, config: Any) -> Any:
        spec = spec_of(view, index, config)
        return replace(spec, retain_bytes=view.options.timed_checks * max(1, view.output_bytes(index)))

    return [
        (timed, "Bracket", _NoBracket),
        (timed, "time_spec", twenty_kept),
        (rechecks, "pause_workers", lambda workers, gpu_only: None),
    ]


def _frozen_timer() -> tuple[list[float], list[tuple[Any, str, Any]]]:
    """Seconds spent in each frozen re-check, and the patch that counts them."""
    spent: list[float] = []
    recheck: Callable[..., bool] = rechecks.frozen_recheck

    def counted(*args: Any, **kwargs: Any) -> bool:
        started = time.perf_counter()
        try:
            return recheck(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - started)

    return spent, [(timed, "frozen_recheck", counted)]


def _calibration_s(device: str, task: str) -> float:
    """Seconds one worker takes to time the judge's empty calls (before its solution loads, ahead of need)."""
    problem = find_problem(task)
    worker = WorkerProcess(WorkerSetup("candidate", str(problem.path), "cuda" if device == "cuda" else "cpu"))
    try:
        worker.request(Ping(), 300, "starting")
        worker.request(Prepare(), 300, "preparing")
        plan = calibration_plan(default_plan(device))
        started = time.perf_counter()
        worker.request(Calibrate(plan), 300, "calibrating")
        return time.perf_counter() - started
    finally:
        worker.close()


def session_run(solution: str, task: str, device: str, repeats: int) -> dict[str, dict[str, float]]:
    """In one warm session, candidates judged alternately without and with the parent's clock and the frozen
    read (the first, which pays for the session's start, left out): per mode, the median seconds per
    candidate, the geometric mean of the times measured (ms), and the hold's parts (s)."""
    spent, counting = _frozen_timer()
    options = cudasmith.EvalOptions(device=device, baselines=("eager",))
    runs: dict[str, list[tuple[float, float, float, float]]] = {"with": [], "without": []}
    with cudasmith.Judge(task=task, options=options, candidates=2 * repeats + 1) as judge:
        for round_ in range(2 * repeats + 1):
            mode = "with" if round_ % 2 == 0 else "without"
            spent.clear()
            started = time.perf_counter()
            with _patched(counting + (_without() if mode == "without" else [])):
                verdict = judge.judge(ROOT / solution)
            if verdict.status != "correct":  # an honest kernel refused is a finding: shown, not averaged
                print(f"{solution} ({mode}): {verdict.status}: {verdict.reason}")
                continue
            if round_:
                report = verdict.timing
                waited = (report.drain_s + report.pause_s + report.settle_s) if report is not None else 0.0
                measured = statistics.geometric_mean([c.time_ms for c in verdict.configs if c.time_ms])
                runs[mode].append((time.perf_counter() - started, measured, waited, sum(spent)))
    if not runs["with"] or not runs["without"]:
        raise SystemExit(f"{solution} was not judged correct in both modes")
    medians = {
        mode: {
            key: statistics.median(row[i] for row in rows)
            for i, key in enumerate(("s", "ms", "waited", "frozen"))
        }
        for mode, rows in runs.items()
    }
    for mode, rows in runs.items():  # how far one mode's candidates spread: the noise the difference sits in
        seconds = [row[0] for row in rows]
        medians[mode]["spread"] = (max(seconds) - min(seconds)) / medians[mode]["s"]
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="", help="only the cases whose solution's name contains this")
    args = parser.parse_args()
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    table = Table(title=f"the parent's clock and the frozen re-check, warm session, median of {args.repeats} "
                        f"candidates, {device_name}")  # fmt: skip
    columns = ("honest kernel", "s/candidate with", "without", "added", "kernel ms with", "without",
               "hold waits s", "frozen re-checks s")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column == "honest kernel" else "right")
    totals = {"with": 0.0, "without": 0.0}
    spread = 0.0
    for solution, task in (case for case in CASES[args.device] if args.only in case[0]):
        modes = session_run(solution, task, args.device, args.repeats)
        with_, without = modes["with"], modes["without"]
        totals["with"] += with_["s"]
        totals["without"] += without["s"]
        spread = max(spread, with_["spread"], without["spread"])
        table.add_row(f"{Path(solution).name} on {task}", f"{with_['s']:.2f}", f"{without['s']:.2f}",
                      f"{100 * (with_['s'] / without['s'] - 1):+.1f} %", f"{with_['ms']:.4f}",
                      f"{without['ms']:.4f}", f"{with_['waited']:.3f}", f"{with_['frozen']:.3f}")  # fmt: skip
    output_console().print(table)
    if totals["without"]:
        # The cases pooled (their medians summed) are the figure to hold against a target; one case's
        # difference is within the spread of candidates judged the same way.
        print(
            f"all cases: {totals['with']:.2f} s with, {totals['without']:.2f} s without, "
            f"{100 * (totals['with'] / totals['without'] - 1):+.1f} % added; candidates judged the same way "
            f"spread by up to {100 * spread:.0f} % of their median within one case"
        )
    seconds = _calibration_s(args.device, CASES[args.device][0][1])
    print(f"calibration (each worker, before its solution loads, ahead of need): {seconds:.3f} s")


if __name__ == "__main__":
    main()
