"""How long checking a config takes, against what harness/check_time.py estimates from its bytes: the
effective passes over a config's bytes per input set, at the device's measured bandwidth.

    python benchmarks/check_time.py                        # the CPU: 16, 64 and 256 MiB vectors
    python benchmarks/check_time.py --device cuda --mib 256 1024 4096

A vector sum (`a + b`, float32) with one config of the size given is judged without timing, one seeded
input set (so: that one, the harness's drawn one and one perturbed afresh); the seconds between the
first and the last checking step, over the input sets between them, is the time per input set. The
table prints, per size, the seconds per input set, the passes that time is worth at the bandwidth
`cudasmith device` measured, and what check_time.py estimates. CHECK_PASSES of the device's kind is
the figure to set there (the largest size's: the smaller ones carry fixed costs).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from rich.console import Console

from cudasmith.device.speed_of_light import ensure_peaks
from cudasmith.harness.check_time import CHECK_PASSES, estimate
from cudasmith.harness.options import EvalOptions
from cudasmith.harness.session import Judge
from cudasmith.report.formats import output_console, plain_table, titled
from cudasmith.tasks.problem import load_problem

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = {
    "cpu": ROOT / "tests" / "solutions" / "vector_add_cpu.py",
    "cuda": ROOT / "tests" / "solutions" / "vector_add_cuda.py",
}
PROBLEM = """
import torch
from torch import nn

CONFIGS = [{{"n": {n}}}]


class Model(nn.Module):
    def forward(self, a, b):
        return a + b


def get_inputs(n={n}):
    return [torch.randn(n), torch.randn(n)]


def get_init_inputs(n={n}):
    return []
"""


def per_input_set(folder: Path, device: str, mib: int) -> tuple[float, int, object]:
    """Seconds per input set checked, the input sets timed, and the session's description of the config."""
    n = mib * 2**20 // 12  # two inputs and one output of float32
    path = folder / f"add_{mib}mib.py"
    path.write_text(PROBLEM.format(n=n))
    steps: list[float] = []

    def progress(what: str, done: int, total: int) -> None:
        if what.startswith("checking config"):
            steps.append(time.monotonic())

    # Generous limits: the check is what is measured, not how a slow call ends.
    options = EvalOptions(
        device=device, timing=False, seeds_per_config=1, memory_limit_bytes=8 * 2**30, call_timeout_s=600.0
    )
    with Judge(load_problem(path), options, progress, candidates=1) as judge:
        verdict = judge.judge(SOLUTIONS["cuda" if device.startswith("cuda") else "cpu"])
        assert verdict.correct, verdict.reason
        ended = time.monotonic()
        described = judge.oracle.described[0]
    return (ended - steps[0]) / len(steps), len(steps), described


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--mib", type=int, nargs="+", default=[16, 64, 256])
    args = parser.parse_args()
    kind = "cuda" if args.device.startswith("cuda") else "cpu"
    peaks = ensure_peaks(args.device)
    table = plain_table()
    for column in ("MiB in and out", "input sets", "s per set", "passes", "estimated s per set"):
        table.add_column(column, justify="right")
    with tempfile.TemporaryDirectory() as folder:
        for mib in args.mib:
            seconds, sets, described = per_input_set(Path(folder), args.device, mib)
            size = described.input_bytes + described.output_bytes  # type: ignore[attr-defined]
            passes = seconds * peaks.memory_gb_per_s * 1e9 / size
            guess = estimate(described, 1, kind, peaks.memory_gb_per_s)  # type: ignore[arg-type]
            table.add_row(
                str(mib),
                str(sets),
                f"{seconds:.2f}",
                f"{passes:.0f}",
                f"{guess.seconds:.2f}" if guess else "?",
            )
    console: Console = output_console()
    title = f"check time per input set on {peaks.device} at {peaks.memory_gb_per_s:.3g} GB/s measured"
    console.print(titled(title, table))
    console.print(f"CHECK_PASSES[{kind!r}] is {CHECK_PASSES[kind]:g} now (harness/check_time.py)")


if __name__ == "__main__":
    main()
