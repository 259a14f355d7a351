"""Timing fidelity: is cudasmith's timer repeatable, accurate and sensitive? Beside do_bench and KernelBench's.

    python benchmarks/timing_fidelity.py                 # on the GPU machine: everything, the table last
    python benchmarks/timing_fidelity.py --json out.json # the same, raw numbers kept
    python benchmarks/timing_fidelity.py --device cpu --quick   # the machinery, on a CPU, in seconds

Kernels from ~2 µs to ~10 ms (NVRTC kernels with unique names, so Nsight Compute can pick them out):
vector sums from 64 Ki to 256 Mi elements, a compute-bound FMA kernel at ~1 ms and ~10 ms, and one
vector sum launched on a side stream that the timing stream never waits for. Steps:
  1. Nsight Compute's gpu__time_duration.sum per kernel (--clock-control none --cache-control all):
     the reference, cold caches, clocks left alone.
  2. PROCESSES independent processes each time every kernel with cudasmith's protocol (ours: CUPTI
     spans; ours-events: the CUDA events of the same samples), triton.testing.do_bench (defaults) and a
     KernelBench-style timer (mean of 100 CUDA-event pairs, same inputs every call).
  3. Sensitivity: SENSITIVITY_RUNS times, ours times a kernel and a variant doing 5 % more work; the
     variant must come out slower with non-overlapping 95 % intervals.
The table (printed last) gives per kernel and timer: median over processes, deviation from ncu, and
spread (max/min - 1 of the processes' medians), then the issue's criteria for ours.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROCESSES = 5
SENSITIVITY_RUNS = 10
# The variant of a sensitivity pair does this much more work.
MORE_WORK = 1.05
# Whole run (seconds): a timing process that would eat into the share kept for sensitivity is skipped,
# and so is sensitivity when nothing is left; the table says what was skipped.
BUDGET_S = 400.0
SENSITIVITY_SHARE = 0.2
# No single step may take longer than these (seconds), nor than what is left of the budget.
NCU_TIMEOUT_S = 150.0
CHILD_TIMEOUT_S = 200.0
# Launches of each kernel profiled by ncu (their median is the reference).
NCU_LAUNCHES = 5
# KernelBench's timer: warm-up calls, then timed calls, each between two events, same inputs.
KERNELBENCH_WARMUP, KERNELBENCH_TRIALS = 3, 100
# Limits of the issue, in per cent, by the kernel's duration (µs): repeatability and accuracy vs ncu.
LONG_KERNEL_US = 20.0
REPEAT_LIMIT_PCT = {"long": 1.0, "short": 3.0}
ACCURACY_LIMIT_PCT = {"long": 3.0, "short": 10.0}
SENSITIVITY_MIN_WINS = 9
# The limit on the wall time of one measurement (warm-up, samples, stop) of a kernel under 1 ms.
TIMING_COST_LIMIT_S = 0.3
FAST_KERNEL_MS = 1.0
TIMERS = ("ours", "ours-span", "ours-events", "do_bench", "kernelbench")
# Where one measurement's wall time goes (timing.protocol.Measurement.phases_s).
PHASES = ("warmup", "sampling", "records")


@dataclass(frozen=True)
class Kernel:
    """One benchmark kernel: a vector sum of `size` floats, or an FMA kernel of `size` iterations."""

    name: str
    kind: str  # add | add-side | fma | empty (GPU); add | mm (CPU)
    size: int


GPU_KERNELS = (
    Kernel("empty", "empty", 0),  # no work: what each timer reads for a launch alone (not judged: the
    # launch cost is calibrated on an empty kernel, so ours matches ncu on it by construction)
    Kernel("add_64k", "add", 2**16),  # ~2 µs on an H100
    Kernel("add_1m", "add", 2**20),  # ~5 µs
    Kernel("add_4m", "add", 2**22),  # ~15 µs
    Kernel("add_8m", "add", 2**23),  # ~30 µs
    Kernel("add_64m", "add", 2**26),  # ~250 µs
    Kernel("add_256m", "add", 2**28),  # ~1 ms
    Kernel("fma_1ms", "fma", 15_000),  # ~1 ms (8 FMA chains x iterations per thread)
    Kernel("fma_10ms", "fma", 150_000),  # ~10 ms
    Kernel("add_8m_side", "add-side", 2**23),  # add_8m on a side stream nobody waits for
)
GPU_SENSITIVITY = ("add_1m", "add_8m", "fma_1ms")
CPU_KERNELS = (Kernel("add_64k", "add", 2**16), Kernel("add_1m", "add", 2**20), Kernel("mm_256", "mm", 256))
CPU_SENSITIVITY = ("add_1m",)

SOURCE = r"""
#define ADD(NAME)                                                                               \
extern "C" __global__ void NAME(const float4* a, const float4* b, float4* c, long long n4) {    \
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;                             \
    if (i < n4) {                                                                               \
        float4 x = a[i], y = b[i];                                                              \
        c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);                         \
    }                                                                                           \
}
#define FMA(NAME)                                                                               \
extern "C" __global__ void NAME(float* out, int iterations) {                                   \
    float x[8];                                                                                 \
    for (int c = 0; c < 8; ++c) x[c] = threadIdx.x * 1e-3f + c;                                 \
    for (int i = 0; i < iterations; ++i) {                                                      \
        _Pragma("unroll") for (int c = 0; c < 8; ++c) x[c] = fmaf(x[c], 0.999f, 0.001f);        \
    }                                                                                           \
    float total = 0.0f;                                                                         \
    for (int c = 0; c < 8; ++c) total += x[c];                                                  \
    if (total == -1.0f) out[0] = total;                                                         \
}
ADD(fidelity_add_64k) ADD(fidelity_add_1m) ADD(fidelity_add_4m) ADD(fidelity_add_8m)
ADD(fidelity_add_64m) ADD(fidelity_add_256m) ADD(fidelity_add_8m_side)
FMA(fidelity_fma_1ms) FMA(fidelity_fma_10ms)
extern "C" __global__ void fidelity_empty() {}
"""
THREADS = 256
FMA_BLOCKS_PER_SM = 8


def log(message: str) -> None:
    """Progress on stdout, so that with stdout and stderr captured apart the table still comes last."""
    print(f"[fidelity] {message}", flush=True)


# ---------------------------------------------------------------- what runs in the child processes


def make_launcher(kernel: Kernel, device: str, work: float = 1.0, copies: int = 1) -> Callable[[int], None]:
    """A function launching the kernel on input set i (of `copies`), doing `work` times its nominal work."""
    import torch

    if device == "cpu":
        if kernel.kind == "mm":
            n = round(kernel.size * work ** (1 / 3))
            shape: tuple[int, ...] = (n, n)
        else:
            shape = (round(kernel.size * work),)
        operation = torch.mm if kernel.kind == "mm" else torch.add
        host_sets = [(torch.randn(shape), torch.randn(shape), torch.empty(shape)) for _ in range(copies)]

        def on_cpu(i: int) -> None:
            operation(host_sets[i][0], host_sets[i][1], out=host_sets[i][2])

        return on_cpu

    import ctypes

    from cudasmith.runtime import compile_cuda

    function = compile_cuda(SOURCE, f"fidelity_{kernel.name}")
    if kernel.kind == "empty":
        return lambda i: function(grid=1, block=32)
    if kernel.kind == "fma":
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        out = torch.zeros(1, device="cuda")
        iterations = ctypes.c_int(round(kernel.size * work))
        return lambda i: function(out, iterations, grid=sms * FMA_BLOCKS_PER_SM, block=THREADS)
    n4 = round(kernel.size * work) // 4
    sets = [[torch.randn(4 * n4, device="cuda") for _ in range(3)] for _ in range(copies)]
    grid, count = -(-n4 // THREADS), ctypes.c_longlong(n4)
    if kernel.kind == "add-side":
        side = torch.cuda.Stream()

        def on_side_stream(i: int) -> None:
            with torch.cuda.stream(side):  # never joined: the timing stream does not wait for it
                function(*sets[i], count, grid=grid, block=THREADS)

        return on_side_stream
    return lambda i: function(*sets[i], count, grid=grid, block=THREADS)


def kernelbench_ms(launch: Callable[[], None], device: str) -> float:
    """KernelBench's timer: mean of CUDA-event pairs around single calls, same inputs (perf_counter on CPU)."""
    import torch

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    for _ in range(KERNELBENCH_WARMUP):
        launch()
    sync()
    times = []
    for _ in range(KERNELBENCH_TRIALS):
        if device == "cpu":
            begin = time.perf_counter()
            launch()
            times.append((time.perf_counter() - begin) * 1e3)
            continue
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        launch()
        end.record()
        sync()
        times.append(start.elapsed_time(end))
    return statistics.fmean(times)


# --min-sampling-s: the protocol's shortest sampling time replaced, to see what a shorter one costs in
# agreement across processes and in sensitivity (None: the protocol's own).
MIN_SAMPLING_S: float | None = None
# --warmup-ms: the protocol's warm-up time replaced (every kernel here but a child's first is timed right
# after another, as a config's window follows another in a candidate's hold).
WARMUP_MS: float | None = None


def plan_for(device: str, quick: bool) -> Any:
    from dataclasses import replace

    from cudasmith.timing.protocol import TimingPlan, default_plan

    if quick:
        plan = TimingPlan(warmup_ms=5.0, min_sampling_s=0.02, max_seconds=0.2)
    elif device.startswith("cuda"):
        from cudasmith.device.launch_cost import calibrated_launch_us

        plan = default_plan(device, launch_us=calibrated_launch_us())
    else:
        plan = default_plan(device)
    if MIN_SAMPLING_S is not None:
        plan = replace(plan, min_sampling_s=MIN_SAMPLING_S)
    return plan if WARMUP_MS is None else replace(plan, warmup_ms=WARMUP_MS)


def prepare_like_a_worker(device: str) -> None:
    """What a judge's worker does before any solution loads (harness/workers/candidate.py's prepare): the timing
    kernels compiled and CUPTI loaded by a first recording. Without it the first kernel measured here
    would pay both, which no config timed by the judge pays."""
    if device != "cuda":
        return
    import torch

    from cudasmith.timing.activity import ActivityRecorder
    from cudasmith.timing.cuda import tools

    torch.zeros(1, device="cuda")
    tools(torch.cuda.current_device())
    ActivityRecorder().stop()


def child_measure(kernels: tuple[Kernel, ...], device: str, quick: bool) -> dict[str, Any]:
    """Every kernel by every timer, in this process."""
    from cudasmith.timing.measure import measure

    try:
        from triton.testing import do_bench
    except ImportError:
        do_bench = None
    prepare_like_a_worker(device)
    results = {}
    for kernel in kernels:
        launch = make_launcher(kernel, device, copies=2)
        plan = plan_for(device, quick)
        started = time.perf_counter()  # the cost of the measurement alone, not of building the plan
        ours = measure(launch, 2, device, plan)
        wall_s = time.perf_counter() - started
        summary = ours.summary()
        results[kernel.name] = {
            "ours": ours.median_ms,
            "ours-span": summary["span_median_ms"] or (ours.median_ms if ours.method == "cupti" else None),
            "ours-events": summary["event_median_ms"],
            "ours_ci95_ms": list(ours.ci95_ms),
            "ours_n": len(ours.samples_ms),
            "ours_wall_s": wall_s,
            "ours_phases_s": ours.phases_s,
            "ours_method": ours.method,
            "ours_warnings": ours.warnings,
            "do_bench": do_bench(lambda launch=launch: launch(0)) if do_bench and device == "cuda" else None,
            "kernelbench": kernelbench_ms(lambda launch=launch: launch(0), device),
        }
        warnings = f"; {' | '.join(ours.warnings)}" if ours.warnings else ""
        phases = ", ".join(f"{name} {seconds:.3f}" for name, seconds in ours.phases_s.items())
        print(
            f"  {kernel.name}: ours {ours.median_ms * 1e3:.2f} µs ({ours.method}, n={len(ours.samples_ms)}, "
            f"stop: {ours.stop}, {wall_s:.3f} s: {phases}{warnings})"
        )
    return results


def child_sensitivity(
    kernels: tuple[Kernel, ...], names: tuple[str, ...], device: str, quick: bool, runs: int
) -> dict[str, Any]:
    """For each kernel named: in how many of `runs` comparisons the +5 % variant is slower, intervals apart."""
    from cudasmith.timing.measure import measure

    results = {}
    for kernel in (k for k in kernels if k.name in names):
        base, more = (
            make_launcher(kernel, device, copies=2),
            make_launcher(kernel, device, MORE_WORK, copies=2),
        )
        wins, pairs = 0, []
        for run in range(runs):
            order = [("base", base), ("more", more)] if run % 2 == 0 else [("more", more), ("base", base)]
            found = {label: measure(launch, 2, device, plan_for(device, quick)) for label, launch in order}
            (_, base_high), (more_low, _) = found["base"].ci95_ms, found["more"].ci95_ms
            wins += more_low > base_high
            pairs.append([found["base"].median_ms, found["more"].median_ms])
        results[kernel.name] = {"wins": wins, "runs": runs, "medians_ms": pairs}
        print(
            f"  {kernel.name}: +{(MORE_WORK - 1) * 100:.0f} % work slower with disjoint intervals {wins}/{runs}"
        )
    return results


def child_ncu_target(kernels: tuple[Kernel, ...]) -> None:
    """Launch each kernel NCU_LAUNCHES times, synchronised, for Nsight Compute to profile."""
    import torch

    for kernel in kernels:
        launch = make_launcher(kernel, "cuda")
        for _ in range(NCU_LAUNCHES):
            launch(0)
            torch.cuda.synchronize()


# ---------------------------------------------------------------- the parent: run, collect, judge


def parse_ncu_csv(text: str) -> dict[str, float]:
    """Median gpu__time_duration.sum per benchmark kernel (name without "fidelity_"), in ms, from `ncu --csv`."""
    from cudasmith.device.launch_cost import parse_ncu_csv as parse

    return {name.removeprefix("fidelity_"): statistics.median(v) for name, v in parse(text).items()}


def run_ncu(script: Path, device_args: list[str], timeout_s: float) -> tuple[dict[str, float], str]:
    """Nsight Compute's time per kernel, and a note (empty when all went well)."""
    from cudasmith.device.launch_cost import ncu_times
    from cudasmith.errors import CudasmithError

    command = [sys.executable, str(script), "--child", "ncu-target", *device_args]
    try:
        found = ncu_times(command, "^fidelity_", timeout_s)
    except CudasmithError as exc:
        return {}, str(exc)
    return {name.removeprefix("fidelity_"): statistics.median(v) for name, v in found.items()}, ""


def calibrate(timeout_s: float) -> str:
    """Calibrate the launch cost afresh (in a child: CUDA stays out of this process); a line saying what came of it."""
    command = [sys.executable, "-m", "cudasmith", "device", "--remeasure", "--json"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
        cost = json.loads(done.stdout)["launch_cost"]
    except (subprocess.TimeoutExpired, ValueError, KeyError) as exc:
        return f"launch cost not calibrated ({type(exc).__name__}): ours are bare CUPTI spans"
    if not isinstance(cost, dict):
        return f"launch cost not calibrated ({cost})"
    return (
        f"launch cost {cost['launch_us']:.2f} µs (ncu {cost['ncu_empty_us']:.2f} µs − CUPTI "
        f"{cost['cupti_empty_us']:.2f} µs on an empty kernel)"
    )


def run_child(script: Path, mode: str, extra: list[str], timeout_s: float) -> dict[str, Any] | str:
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory) / "result.json"
        command = [sys.executable, str(script), "--child", mode, "--out", str(out), *extra]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            return f"{mode} process took longer than {timeout_s:.0f} s"
        for line in done.stdout.splitlines():
            log(line)
        if done.returncode != 0 or not out.is_file():
            tail = " | ".join(done.stderr.strip().splitlines()[-3:])[:400]
            return f"{mode} process failed with exit code {done.returncode}: {tail}"
        return json.loads(out.read_text())


def spread_pct(values: list[float]) -> float | None:
    """max/min - 1 of positive values, in per cent."""
    values = [v for v in values if v and v > 0]
    return (max(values) / min(values) - 1) * 100 if len(values) >= 2 else None


def summarise(
    kernels: tuple[Kernel, ...], runs: list[dict[str, Any]], ncu: dict[str, float]
) -> dict[str, Any]:
    """Per kernel and timer: median over processes (ms), deviation from ncu and spread (per cent)."""
    rows = {}
    for kernel in kernels:
        row: dict[str, Any] = {"ncu_ms": ncu.get(kernel.name)}
        for timer in TIMERS:
            medians = [
                run[kernel.name][timer] for run in runs if run.get(kernel.name, {}).get(timer) is not None
            ]
            center = statistics.median(medians) if medians else None
            row[timer] = {
                "ms": center,
                "per_process_ms": medians,
                "vs_ncu_pct": (center / row["ncu_ms"] - 1) * 100 if center and row["ncu_ms"] else None,
                "spread_pct": spread_pct(medians),
            }
        costs = [run[kernel.name]["ours_wall_s"] for run in runs if "ours_wall_s" in run.get(kernel.name, {})]
        row["ours_wall_s"] = {"s": statistics.median(costs) if costs else None, "per_process_s": costs}
        phases = [run[kernel.name].get("ours_phases_s") or {} for run in runs if kernel.name in run]
        row["ours_phases_s"] = {
            name: statistics.median(p[name] for p in phases if name in p)
            for name in PHASES
            if any(name in p for p in phases)
        }
        counts = [run[kernel.name]["ours_n"] for run in runs if "ours_n" in run.get(kernel.name, {})]
        row["ours_n"] = statistics.median(counts) if counts else None
        rows[kernel.name] = row
    return rows


def size_class(row: dict[str, Any]) -> str:
    reference_ms = row["ncu_ms"] or row["ours"]["ms"] or 0.0
    return "long" if reference_ms * 1e3 >= LONG_KERNEL_US else "short"


def verdicts(kernels: tuple[Kernel, ...], rows: dict[str, Any], sensitivity: dict[str, Any]) -> list[str]:
    """The issue's criteria for ours, one line each (accuracy also for both CUPTI spans, for comparison)."""
    lines = []
    same_stream = [k.name for k in kernels if k.kind not in ("add-side", "empty")]
    for what, limits, key, timer in (
        ("repeatability", REPEAT_LIMIT_PCT, "spread_pct", "ours"),
        ("accuracy vs ncu", ACCURACY_LIMIT_PCT, "vs_ncu_pct", "ours"),
        ("(ours-span, for comparison) accuracy vs ncu", ACCURACY_LIMIT_PCT, "vs_ncu_pct", "ours-span"),
    ):
        for cls in ("long", "short"):
            names = [n for n in same_stream if size_class(rows[n]) == cls and rows[n][timer][key] is not None]
            bound = f"≥{LONG_KERNEL_US:.0f} µs" if cls == "long" else f"<{LONG_KERNEL_US:.0f} µs"
            if not names:
                lines.append(f"{what} {bound}: not measured")
                continue
            worst = max(names, key=lambda n: abs(rows[n][timer][key]))
            value = abs(rows[worst][timer][key])
            ok = all(abs(rows[n][timer][key]) <= limits[cls] for n in names)
            lines.append(
                f"{what} {bound}: {'PASS' if ok else 'FAIL'} (limit {limits[cls]:.0f} %, worst {worst} {value:.2f} %)"
            )
    for name, result in sensitivity.items():
        ok = result["wins"] >= SENSITIVITY_MIN_WINS * result["runs"] / SENSITIVITY_RUNS
        lines.append(
            f"sensitivity {name} +{(MORE_WORK - 1) * 100:.0f} % work: {'PASS' if ok else 'FAIL'} ({result['wins']}/{result['runs']} slower, intervals apart)"
        )
    for kernel in (k for k in kernels if k.kind == "add-side"):
        row = rows[kernel.name]
        parts = [f"{t} {row[t]['ms'] * 1e3:.2f} µs" for t in TIMERS if row[t]["ms"] is not None]
        reference = f"ncu {row['ncu_ms'] * 1e3:.2f} µs; " if row["ncu_ms"] else ""
        lines.append(f"side-stream work ({kernel.name}): {reference}{', '.join(parts)}")
    fast = [
        k.name
        for k in kernels
        if rows[k.name]["ours_wall_s"]["s"] is not None
        and (rows[k.name]["ncu_ms"] or rows[k.name]["ours"]["ms"] or 0.0) < FAST_KERNEL_MS
    ]
    if fast:
        worst = max(fast, key=lambda n: rows[n]["ours_wall_s"]["s"])
        cost = rows[worst]["ours_wall_s"]["s"]
        lines.append(
            f"timing cost <{FAST_KERNEL_MS:.0f} ms: {'PASS' if cost <= TIMING_COST_LIMIT_S else 'FAIL'} "
            f"(limit {TIMING_COST_LIMIT_S} s per measurement, worst {worst} {cost:.2f} s)"
        )
    else:
        lines.append(
            f"timing cost <{FAST_KERNEL_MS:.0f} ms: no kernel under {FAST_KERNEL_MS:.0f} ms measured"
        )
    return lines


def table(kernels: tuple[Kernel, ...], rows: dict[str, Any]) -> str:
    def cell(value: float | None, fmt: str) -> str:
        return (
            "–" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, fmt)
        )

    header = f"{'kernel':<12} {'ncu µs':>9} │" + "".join(
        f" {t + ' µs':>14} {'Δncu':>7} {'spread':>7} │" for t in TIMERS
    )
    header += f" {'cost s':>7}"
    lines = [header, "─" * len(header)]
    for kernel in kernels:
        row = rows[kernel.name]
        text = f"{kernel.name:<12} {cell(row['ncu_ms'] and row['ncu_ms'] * 1e3, '.2f'):>9} │"
        for timer in TIMERS:
            entry = row[timer]
            text += (
                f" {cell(entry['ms'] and entry['ms'] * 1e3, '.2f'):>14}"
                f" {cell(entry['vs_ncu_pct'], '+.1f') + ('%' if entry['vs_ncu_pct'] is not None else ''):>7}"
                f" {cell(entry['spread_pct'], '.2f') + ('%' if entry['spread_pct'] is not None else ''):>7} │"
            )
        text += f" {cell(row['ours_wall_s']['s'], '.3f'):>7}"
        lines.append(text)
    return "\n".join(lines)


def cost_table(kernels: tuple[Kernel, ...], rows: dict[str, Any]) -> str:
    """Per kernel, what one measurement by ours cost: wall seconds, its phases and its samples (medians
    over processes)."""
    header = (
        f"{'kernel':<12} {'cost s':>7} {'warm-up s':>10} {'sampling s':>11} {'records s':>10} {'samples':>8}"
    )
    lines = [header, "─" * len(header)]
    for kernel in kernels:
        row = rows[kernel.name]
        phases = row.get("ours_phases_s") or {}
        cells = [row["ours_wall_s"]["s"], *(phases.get(name) for name in PHASES)]
        text = f"{kernel.name:<12}" + "".join(
            f" {'–' if value is None else format(value, '.3f'):>{width}}"
            for value, width in zip(cells, (7, 10, 11, 10), strict=True)
        )
        count = row.get("ours_n")
        lines.append(text + f" {'–' if count is None else format(count, '.0f'):>8}")
    return "\n".join(lines)


def environment(device: str) -> str:
    import torch

    from cudasmith.device import software_versions
    from cudasmith.hardware import device_name

    versions = software_versions()
    name = device_name(device)
    return f"{name}; torch {torch.__version__}, CUDA {versions['cuda']}, driver {versions['driver']}, triton {versions['triton']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--processes", type=int, default=PROCESSES)
    parser.add_argument("--sensitivity-runs", type=int, default=SENSITIVITY_RUNS)
    parser.add_argument("--no-ncu", action="store_true", help="skip Nsight Compute")
    parser.add_argument(
        "--quick", action="store_true", help="short timing plan: checks the machinery, not the numbers"
    )
    parser.add_argument("--budget-s", type=float, default=BUDGET_S)
    parser.add_argument(
        "--min-sampling-s",
        type=float,
        help="shortest sampling time of our protocol (default: the protocol's), to try a shorter one",
    )
    parser.add_argument(
        "--warmup-ms",
        type=float,
        help="warm-up time of our protocol (default: the protocol's), to try a shorter one",
    )
    parser.add_argument("--json", type=Path, help="write every number here")
    parser.add_argument("--child", choices=("measure", "sensitivity", "ncu-target"), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    global MIN_SAMPLING_S, WARMUP_MS
    MIN_SAMPLING_S, WARMUP_MS = args.min_sampling_s, args.warmup_ms
    kernels = GPU_KERNELS if args.device == "cuda" else CPU_KERNELS
    names = GPU_SENSITIVITY if args.device == "cuda" else CPU_SENSITIVITY
    if args.child == "ncu-target":
        child_ncu_target(kernels)
        return
    if args.child is not None:
        if args.child == "measure":
            result = child_measure(kernels, args.device, args.quick)
        else:
            result = child_sensitivity(kernels, names, args.device, args.quick, args.sensitivity_runs)
        args.out.write_text(json.dumps(result))
        return
    from cudasmith.device import usable_device
    from cudasmith.errors import UsageError

    try:
        usable_device(args.device)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)

    started = time.monotonic()
    script = Path(__file__).resolve()
    child_args = [
        "--device",
        args.device,
        *(["--quick"] if args.quick else []),
        *(["--min-sampling-s", str(args.min_sampling_s)] if args.min_sampling_s is not None else []),
        *(["--warmup-ms", str(args.warmup_ms)] if args.warmup_ms is not None else []),
        "--sensitivity-runs",
        str(args.sensitivity_runs),
    ]
    notes: list[str] = []
    if args.min_sampling_s is not None:
        notes.append(f"ours sampled for at least {args.min_sampling_s:g} s per kernel (--min-sampling-s)")
    if args.warmup_ms is not None:
        notes.append(f"ours warmed up for {args.warmup_ms:g} ms per kernel (--warmup-ms)")

    def left() -> float:
        return args.budget_s - (time.monotonic() - started)

    ncu: dict[str, float] = {}
    calibration = ""
    if args.device == "cuda" and not args.no_ncu:
        log("calibrating the launch cost (cudasmith device)")
        calibration = calibrate(min(NCU_TIMEOUT_S, left()))
        log(calibration)
        log("Nsight Compute: gpu__time_duration.sum per kernel")
        ncu, note = run_ncu(script, ["--device", args.device], min(NCU_TIMEOUT_S, left()))
        if note:
            notes.append(note)
    runs: list[dict[str, Any]] = []
    timing_started = time.monotonic()
    reserve_s = SENSITIVITY_SHARE * args.budget_s
    for index in range(args.processes):
        per_process_s = (time.monotonic() - timing_started) / index if index else 0.0
        if left() - reserve_s < per_process_s:
            notes.append(
                f"time budget: {args.processes - index} of {args.processes} timing processes skipped"
            )
            break
        log(f"timing process {index + 1} of {args.processes}")
        result = run_child(script, "measure", child_args, min(CHILD_TIMEOUT_S, left()))
        if isinstance(result, str):
            notes.append(result)
        else:
            runs.append(result)
    sensitivity: dict[str, Any] = {}
    if left() > 0:
        log("sensitivity")
        found = run_child(script, "sensitivity", child_args, min(CHILD_TIMEOUT_S, max(left(), 1.0)))
        sensitivity = found if isinstance(found, dict) else {}
        if isinstance(found, str):
            notes.append(found)
    else:
        notes.append("time budget: sensitivity skipped")
    rows = summarise(kernels, runs, ncu)
    if args.json:
        document = {
            "environment": environment(args.device),
            "rows": rows,
            "sensitivity": sensitivity,
            "ncu_ms": ncu,
            "calibration": calibration,
            "notes": notes,
        }
        args.json.write_text(json.dumps(document, indent=2))
    print(f"\nTiming fidelity on {environment(args.device)}")
    reference = "ncu --clock-control none --cache-control all" if ncu else "no Nsight Compute reference"
    print(f"{len(runs)} processes; {reference}; {time.monotonic() - started:.0f} s")
    print(f"{calibration or 'launch cost: not calibrated (no ncu run)'}\n")
    print(table(kernels, rows))
    print("\nΔncu: median over processes vs Nsight Compute's gpu__time_duration.sum. spread: max/min - 1 of")
    print("the processes' medians. ours: the harness's time (CUPTI span plus the calibrated launch cost);")
    print("ours-span: the bare CUPTI spans; ours-events: CUDA events of the same queued samples;")
    print(
        "do_bench: triton.testing.do_bench defaults (mean); kernelbench: mean of 100 event pairs, same inputs."
    )
    print(
        "cost s: wall seconds of one measurement by ours (warm-up, samples, stop), median over processes.\n"
    )
    print("Timing cost per kernel (ours; records: reading CUPTI's records, at checkpoints and at the end)")
    print(cost_table(kernels, rows) + "\n")
    for line in [*verdicts(kernels, rows, sensitivity), *(f"note: {n}" for n in notes)]:
        print(line)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
