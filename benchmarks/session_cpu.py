"""What a judge session saves on the CPU: N honest candidates judged one-shot (a `cudasmith.evaluate` each,
as separate `cudasmith eval` runs would) against the same N in one session, side by side in one run.

    python benchmarks/session_cpu.py            # three candidates, the protocol's defaults
    python benchmarks/session_cpu.py --quick    # fewer input sets per config (what CI runs)

Prints seconds per candidate for each way and their ratio; every verdict must be correct.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

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

    @property
    def per_candidate(self) -> float:
        return self.seconds / max(1, len(self.statuses))


def one_shot(options: object) -> Run:
    import cudasmith

    started = time.perf_counter()
    statuses = [str(cudasmith.evaluate(path, task=TASK, options=options).status) for path in CANDIDATES]
    return Run("one-shot evaluate (each its own session)", time.perf_counter() - started, statuses)


def session(options: object) -> Run:
    import cudasmith

    started = time.perf_counter()
    with cudasmith.Judge(task=TASK, options=options, candidates=len(CANDIDATES)) as judge:
        statuses = [str(verdict.status) for verdict in judge.judge_many(CANDIDATES)]
    return Run("one session", time.perf_counter() - started, statuses)


def measure(quick: bool) -> tuple[Run, Run]:
    """Both ways, one after the other, with the same options."""
    from cudasmith import EvalOptions

    options = EvalOptions(device="cpu", seeds_per_config=1 if quick else 3)
    return one_shot(options), session(options)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one input set per config")
    args = parser.parse_args()
    separate, together = measure(args.quick)
    table = Table(title=f"{len(CANDIDATES)} honest candidates on {TASK}, CPU")
    for column in ("way", "wall s", "s per candidate", "verdicts"):
        table.add_column(column, justify="left" if column in {"way", "verdicts"} else "right")
    for run in (separate, together):
        table.add_row(run.way, f"{run.seconds:.1f}", f"{run.per_candidate:.1f}", ", ".join(run.statuses))
    Console().print(table)
    ratio = separate.seconds / together.seconds
    print(f"a session costs 1/{ratio:.2f} of one-shot evaluations")
    if not all(status == "correct" for run in (separate, together) for status in run.statuses):
        sys.exit(1)


if __name__ == "__main__":
    main()
