"""Where a new judge session's first verdict waits: the session's start, step by step (harness/startup.py).

    python benchmarks/session_start.py                                   # on the GPU machine
    python benchmarks/session_start.py --device cpu --task level1/vector_add \
        --solution tests/solutions/vector_add_cpu.py                     # plumbing, on a CPU

Each run opens a fresh session (--runs of them, one after another in this process, as a search opens one
per task) and judges the same solution twice: the first verdict pays the start, the second shows a warm
session. Per run it prints when each step of the start was first reached (seconds since the session was
made), the first verdict's hold (held, its timed requests: peaks, baselines and the candidate's configs)
and the second verdict's time. The issue's target: the first verdict within 5 s of the session's start on
the H200 (12 s before). Reference outputs are computed afresh in every session (its secret seeds them).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = {
    "cuda": ("level1/softmax", "examples/softmax_cuda.py"),
    "cpu": ("level1/vector_add", "tests/solutions/vector_add_cpu.py"),
}


def one_session(task: str, solution: Path, device: str, baselines: tuple[str, ...]) -> dict[str, object]:
    """One fresh session: its start's marks, the first verdict's hold and the second verdict's seconds."""
    from cudasmith.harness.options import EvalOptions
    from cudasmith.harness.session import Judge

    options = EvalOptions(device=device, baselines=baselines)
    made = time.monotonic()
    with Judge(task=task, options=options, candidates=2) as judge:
        first = judge.judge(solution)
        first_s = time.monotonic() - made
        second = judge.judge(solution)
        marks = judge.startup.marks()
    timing = first.timing
    return {
        "first_verdict_s": round(first_s, 3),
        "first_status": str(first.status),
        "second_verdict_s": second.wall_s,
        "marks": marks,
        "first_hold": None
        if timing is None
        else {
            key: getattr(timing, key)
            for key in ("drain_s", "pause_s", "settle_s", "held_s", "requests_s", "recheck_s")
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--task", help="default: level1/softmax on cuda, level1/vector_add on cpu")
    parser.add_argument("--solution", type=Path, help="default: the task's example or test solution")
    parser.add_argument("--runs", type=int, default=2, help="fresh sessions, one after another (default 2)")
    parser.add_argument(
        "--baselines", default="eager", help="baselines timed (default: eager, as throughput.py)"
    )
    parser.add_argument("--out", type=Path, help="write every number here (JSON)")
    args = parser.parse_args()
    task, solution = DEFAULT[args.device]
    task, solution_path = args.task or task, args.solution or ROOT / solution
    runs = []
    for run in range(args.runs):
        found = one_session(task, solution_path, args.device, tuple(args.baselines.split(",")))
        runs.append(found)
        marks = ", ".join(f"{step} {at:.2f}" for step, at in found["marks"].items())  # type: ignore[union-attr]
        print(
            f"session {run + 1}: first verdict ({found['first_status']}) after {found['first_verdict_s']:.2f} s, "
            f"second {found['second_verdict_s']:.2f} s; start: {marks}; first hold: {found['first_hold']}",
            flush=True,
        )
    firsts = [r["first_verdict_s"] for r in runs]
    print(
        f"first verdict of a new session: median {statistics.median(firsts):.2f} s over {len(runs)} "
        f"(target on the H200: at most 5 s)"
    )
    if args.out:
        args.out.write_text(
            json.dumps({"task": task, "solution": str(solution_path), "runs": runs}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
