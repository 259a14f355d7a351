"""What a judge session saves on the CPU: N honest candidates judged one-shot (a `cudasmith.evaluate` each,
as separate `cudasmith eval` runs would) against the same N in one session, side by side in one run.

    python benchmarks/session_cpu.py                 # three candidates, the protocol's defaults
    python benchmarks/session_cpu.py --quick         # fewer input sets per config (what CI runs)
    python benchmarks/session_cpu.py --in-flight 1   # the session judging one candidate at a time

Prints seconds per candidate for each way, their ratio and the load average around the run (the machine
may be shared: both ways run back to back, so they see the same load); every verdict must be correct and
every timing window exclusive.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from cudasmith.report.formats import output_console

ROOT = Path(__file__).resolve().parents[1]
TASK = "level1/vector_add"
CANDIDATES = (
    ROOT / "tests" / "solutions" / "vector_add_cpu.py",
    ROOT / "tests" / "exploits" / "solutions" / "honest_vector_add_openmp.py",
    ROOT / "tests" / "exploits" / "solutions" / "honest_vector_add_unrolled.py",
)


@dataclass
class Run:
    """One way of judging the batch: its wall time and what it said."""

    way: str
    seconds: float
    statuses: list[str]
    exclusive: list[bool]

    @property
    def per_candidate(self) -> float:
        return self.seconds / max(1, len(self.statuses))


def one_shot(options: object) -> Run:
    import cudasmith

    started = time.perf_counter()
    verdicts = [cudasmith.evaluate(path, task=TASK, options=options) for path in CANDIDATES]
    return Run(
        "one-shot evaluate (each its own session)",
        time.perf_counter() - started,
        [str(v.status) for v in verdicts],
        [bool(v.timing and v.timing.exclusive) for v in verdicts],
    )


def session(options: object) -> Run:
    import cudasmith

    started = time.perf_counter()
    with cudasmith.Judge(task=TASK, options=options, candidates=len(CANDIDATES)) as judge:
        verdicts = list(judge.judge_many(CANDIDATES))
        way = f"one session, {judge.in_flight} in flight"
    return Run(
        way,
        time.perf_counter() - started,
        [str(v.status) for v in verdicts],
        [bool(v.timing and v.timing.exclusive) for v in verdicts],
    )


def measure(quick: bool, in_flight: int | None = None) -> tuple[Run, Run]:
    """Both ways, one after the other, with the same options (`in_flight`: the session's candidates at once)."""
    from cudasmith import EvalOptions

    options = EvalOptions(device="cpu", seeds_per_config=1 if quick else 3, in_flight=in_flight)
    return one_shot(options), session(options)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one input set per config")
    parser.add_argument("--in-flight", type=int, default=None, help="the session's candidates at once")
    args = parser.parse_args()
    load_before = os.getloadavg()
    separate, together = measure(args.quick, args.in_flight)
    load_after = os.getloadavg()
    table = Table(title=f"{len(CANDIDATES)} honest candidates on {TASK}, CPU ({os.cpu_count()} cores)")
    for column in ("way", "wall s", "s per candidate", "verdicts", "windows exclusive"):
        table.add_column(column, justify="left" if column in {"way", "verdicts"} else "right")
    for run in (separate, together):
        exclusive = f"{sum(run.exclusive)}/{len(run.exclusive)}"
        table.add_row(
            run.way, f"{run.seconds:.1f}", f"{run.per_candidate:.1f}", ", ".join(run.statuses), exclusive
        )
    output_console().print(table)
    ratio = separate.seconds / together.seconds
    print(f"a session costs 1/{ratio:.2f} of one-shot evaluations")
    print(
        "load average (1, 5, 15 min) before: {:.2f} {:.2f} {:.2f}, after: {:.2f} {:.2f} {:.2f}".format(
            *load_before, *load_after
        )
    )
    runs = (separate, together)
    if not all(status == "correct" for run in runs for status in run.statuses) or not all(
        flag for run in runs for flag in run.exclusive
    ):
        sys.exit(1)


if __name__ == "__main__":
    main()
