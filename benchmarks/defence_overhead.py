"""What the judge's defences cost: eval wall time for honest kernels with and without them.

    python benchmarks/defence_overhead.py [--device cpu|cuda] [--repeats 3]

"Without" (EvalOptions(defences=False)) turns off the static screen, the harness-drawn inputs, the
re-checked timed calls and per-call input perturbation, poisoned free memory, PyTorch operator
recording, the input-mutation and tamper checks. Process isolation (spawned workers under a
supervisor) is the architecture and stays on in both. Prints the median wall time of each, in seconds.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

import cudasmith

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "cpu": [
        ("examples/softmax_cpu.py", "level1/softmax"),
        ("tests/exploits/solutions/honest_relu.py", "level1/relu"),
    ],
    "cuda": [
        ("examples/softmax_cuda.py", "level1/softmax"),
        ("tests/exploits/solutions/gpu_honest_relu.py", "level1/relu"),
    ],
}


def wall_time(solution: str, task: str, device: str, defences: bool) -> float:
    started = time.perf_counter()
    verdict = cudasmith.evaluate(
        ROOT / solution, task=task, device=device, defences=defences, baselines=("eager",)
    )
    if verdict.status != "correct":
        raise SystemExit(f"{solution} is not correct ({verdict.status}): {verdict.reason}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for solution, task in CASES[args.device]:
        times = {
            on: [wall_time(solution, task, args.device, on) for _ in range(args.repeats)]
            for on in (True, False)
        }
        with_, without = statistics.median(times[True]), statistics.median(times[False])
        rows.append((f"{Path(solution).name} on {task}", with_, without))
    device = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    print(f"\neval wall time, median of {args.repeats} runs each, on {device}")
    print(f"{'honest kernel':44} {'defences on':>12} {'off':>8} {'overhead':>9}")
    for name, with_, without in rows:
        print(f"{name:44} {with_:10.1f} s {without:6.1f} s {100 * (with_ / without - 1):8.0f} %")


if __name__ == "__main__":
    main()
