"""What perturbing a timed call's inputs costs on the CPU, beside the call it surrounds.

    python benchmarks/perturb_cost.py                 # two inputs of 3M elements (vector_add's hidden config)
    python benchmarks/perturb_cost.py --elements 1048573 --repeats 50

Every timed call's inputs are perturbed before it and restored after it (tasks/perturb.py), outside the
timed region but inside the window's sampling cap: on the CPU, where the cap (0.5 s) ends most windows,
what the two passes cost is samples the window does not take. Prints, per dtype, milliseconds per pass
over the inputs for the compiled C pass and the PyTorch fallback (the same bits, checked), and the
elementwise sum of the inputs as the call they surround.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

import torch
from rich.table import Table

from cudasmith.report.formats import output_console
from cudasmith.tasks import perturb


def per_call_ms(work: Callable[[int], object], repeats: int) -> float:
    """The median milliseconds of `work(i)` over `repeats` calls, after one call that is not counted."""
    work(-1)
    times = []
    for i in range(repeats):
        started = time.perf_counter()
        work(i)
        times.append((time.perf_counter() - started) * 1e3)
    return sorted(times)[len(times) // 2]


def measure_dtype(dtype: torch.dtype, elements: int, repeats: int) -> list[str]:
    """One row: the compiled pass's and the fallback's ms per pass, their ratio, a + b's ms, same bits."""
    compiled = perturb._cpu_kernel
    inputs = [torch.randn(elements, dtype=torch.float64).to(dtype) for _ in range(2)]
    by_torch = [t.clone() for t in inputs]
    perturb.perturb_inputs(inputs, 7)
    perturb._cpu_kernel = None
    try:
        perturb.perturb_inputs(by_torch, 7)
        same = all(
            torch.equal(a.view(torch.uint8), b.view(torch.uint8))
            for a, b in zip(inputs, by_torch, strict=True)
        )
        fallback_ms = per_call_ms(lambda i: perturb.perturb_inputs(by_torch, i), repeats)
    finally:
        perturb._cpu_kernel = compiled
    compiled_ms = per_call_ms(lambda i: perturb.perturb_inputs(inputs, i), repeats)
    sum_ms = per_call_ms(lambda i: inputs[0] + inputs[1], repeats)
    ratio = f"{fallback_ms / compiled_ms:.1f}x"
    return [f"{compiled_ms:.2f}", f"{fallback_ms:.2f}", ratio, f"{sum_ms:.2f}", "yes" if same else "NO"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=3_000_000, help="elements in each of the two inputs")
    parser.add_argument(
        "--repeats", type=int, default=20, help="passes timed per row (their median is shown)"
    )
    args = parser.parse_args()
    if not perturb.prepare("cpu"):
        sys.exit("no C compiler here: only the PyTorch fallback would run")
    table = Table(title=f"perturbing 2 inputs of {args.elements:,} elements, CPU ({os.cpu_count()} cores)")
    for column in (
        "dtype",
        "compiled ms",
        "PyTorch fallback ms",
        "fallback / compiled",
        "a + b ms",
        "same bits",
    ):
        table.add_column(column, justify="left" if column == "dtype" else "right")
    for dtype in perturb.FLOAT_BITS:
        row = measure_dtype(dtype, args.elements, args.repeats)
        table.add_row(str(dtype).removeprefix("torch."), *row)
        if row[-1] != "yes":
            output_console().print(table)
            sys.exit("the compiled pass and the PyTorch fallback gave different bits")
    output_console().print(table)


if __name__ == "__main__":
    main()
