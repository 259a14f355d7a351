"""What the judge's defences cost: seconds per candidate in a warm session, and the times it measures,
for honest kernels judged with and without them, side by side in one run.

    python benchmarks/defence_overhead.py [--device cpu|cuda] [--repeats 3]

"Without" (EvalOptions(defences=False)) turns off the static screen, the harness-drawn inputs, the
re-checked timed calls and per-call input perturbation, poisoned free memory, the operator and kernel
audit (the profiler around every call), the audit hook and its tripwires, the input-mutation and tamper
checks. Process isolation (a fresh worker per candidate, under a supervisor) is the architecture and
stays on in both. The kernel's own measured time should not move: the defences work between calls.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
from rich.table import Table

import cudasmith
from cudasmith.report.formats import output_console

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


def session_run(solution: str, task: str, device: str, defences: bool, repeats: int) -> tuple[float, float]:
    """Median seconds per candidate (the first, which pays for the session's start, left out) and the
    geometric-mean time the judge measured for the kernel, in ms."""
    options = cudasmith.EvalOptions(device=device, defences=defences, baselines=("eager",))
    seconds, measured = [], []
    with cudasmith.Judge(task=task, options=options, candidates=repeats + 1) as judge:
        for round_ in range(repeats + 1):
            started = time.perf_counter()
            verdict = judge.judge(ROOT / solution)
            if verdict.status != "correct":
                raise SystemExit(f"{solution} is not correct ({verdict.status}): {verdict.reason}")
            if round_:
                seconds.append(time.perf_counter() - started)
                times = [c.time_ms for c in verdict.configs if c.time_ms]
                measured.append(statistics.geometric_mean(times))
    return statistics.median(seconds), statistics.median(measured)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    table = Table(
        title=f"defences on and off, warm session, median of {args.repeats} candidates, {device_name}"
    )
    for column in ("honest kernel", "s/candidate on", "off", "overhead", "kernel ms on", "off", "moved"):
        table.add_column(column, justify="left" if column == "honest kernel" else "right")
    for solution, task in CASES[args.device]:
        on_s, on_ms = session_run(solution, task, args.device, True, args.repeats)
        off_s, off_ms = session_run(solution, task, args.device, False, args.repeats)
        table.add_row(f"{Path(solution).name} on {task}", f"{on_s:.2f}", f"{off_s:.2f}",
                      f"{100 * (on_s / off_s - 1):+.0f} %", f"{on_ms:.4f}", f"{off_ms:.4f}",
                      f"{100 * (on_ms / off_ms - 1):+.1f} %")  # fmt: skip
    output_console().print(table)


if __name__ == "__main__":
    main()
