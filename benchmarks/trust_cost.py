"""What the parent's own witnesses cost: its clock around each timed request and the frozen re-check of timed
outputs (issue 44), seconds per candidate in a warm session, with and without them, side by side in one run.

    python benchmarks/trust_cost.py [--device cpu|cuda] [--repeats 3]

"Without" patches them out of this process (the parent): no calibration of the workers' empty calls, no reading
of /proc around a timed request, the re-check's outputs read without stopping the worker, and the worker asked
to keep 20 timed calls' outputs instead of every one (as the judge did before). What stays in both: the timed
calls' own thread on the CPU and the budgets counted in CPU time (they are the worker's protocol). The table
also says where each candidate's hold went: waiting for steps (drain), pausing the others, settling NVML, and
the frozen re-checks (stopping the worker, the judge's worker reading and comparing, resuming it).
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
from rich.console import Console
from rich.table import Table

import cudasmith
from cudasmith.harness import rechecks, session, timed
from cudasmith.harness.bracket import Reading

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
    """The patches that take the parent's clock and the frozen read out."""
    spec_of = timed.time_spec

    def twenty_kept(view: Any, index: int, config: Any) -> Any:
        spec = spec_of(view, index, config)
        return replace(spec, retain_bytes=view.options.timed_checks * max(1, view.output_bytes(index)))

    return [
        (session, "calibration_plan", lambda plan, gpu: None),
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


def session_run(solution: str, task: str, device: str, trusted: bool, repeats: int) -> dict[str, float]:
    """Median seconds per candidate (the first, which pays for the session's start, left out), the geometric
    mean of the times measured (ms), and the hold's parts per candidate (s)."""
    spent, counting = _frozen_timer()
    options = cudasmith.EvalOptions(device=device, baselines=("eager",))
    seconds, measured, holds = [], [], []
    with (
        _patched(counting + ([] if trusted else _without())),
        cudasmith.Judge(task=task, options=options, candidates=repeats + 1) as judge,
    ):
        for round_ in range(repeats + 1):
            spent.clear()
            started = time.perf_counter()
            verdict = judge.judge(ROOT / solution)
            if verdict.status != "correct":
                raise SystemExit(f"{solution} is not correct ({verdict.status}): {verdict.reason}")
            if round_:
                seconds.append(time.perf_counter() - started)
                measured.append(statistics.geometric_mean([c.time_ms for c in verdict.configs if c.time_ms]))
                report = verdict.timing
                waited = (report.drain_s + report.pause_s + report.settle_s) if report is not None else 0.0
                holds.append((waited, sum(spent)))
    return {
        "s": statistics.median(seconds),
        "ms": statistics.median(measured),
        "waited": statistics.median(w for w, _ in holds),
        "frozen": statistics.median(f for _, f in holds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    table = Table(title=f"the parent's clock and the frozen re-check, warm session, median of {args.repeats} "
                        f"candidates, {device_name}")  # fmt: skip
    columns = ("honest kernel", "s/candidate with", "without", "added", "kernel ms with", "without",
               "hold waits s", "frozen re-checks s")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column == "honest kernel" else "right")
    for solution, task in CASES[args.device]:
        without = session_run(solution, task, args.device, False, args.repeats)
        with_ = session_run(solution, task, args.device, True, args.repeats)
        table.add_row(f"{Path(solution).name} on {task}", f"{with_['s']:.2f}", f"{without['s']:.2f}",
                      f"{100 * (with_['s'] / without['s'] - 1):+.1f} %", f"{with_['ms']:.4f}",
                      f"{without['ms']:.4f}", f"{with_['waited']:.3f}", f"{with_['frozen']:.3f}")  # fmt: skip
    Console().print(table)


if __name__ == "__main__":
    main()
