"""KernelBench compatibility check: does every level 1-3 problem of a KernelBench checkout load with
cudasmith's loader, and does its reference run as the harness runs it (task dtype, then float64)?

    python benchmarks/kernelbench_compat.py PATH/TO/KernelBench-checkout [--levels 1 2 3] [--load-only]

References run on the GPU when there is one; on the CPU, problems over --cpu-max-mib of inputs and
outputs or --cpu-max-gflop are skipped. Level 4 is listed as skipped: it downloads models. Each problem
runs in a worker process (restarted after a crash, a timeout or a sticky CUDA error), and each result
is appended to --results as one JSON line, so a run that stops resumes where it stopped. The table at
the end counts every problem; the exit code is 0 when every level 1-3 problem loaded and ran.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import select
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from cudasmith.errors import UsageError
from cudasmith.report.formats import output_console
from cudasmith.tasks.directory import load_problem_dir

INIT_SEED, INPUT_SEED = 1, 2
# Messages after which the CUDA context of the worker cannot be trusted: the worker is restarted.
STICKY_CUDA = ("device-side assert", "illegal memory access", "CUDA error", "unspecified launch failure")
console = Console(stderr=True)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}".rstrip(": ")


def run_reference(
    path: str, device: str, made_on: str, cpu_max_bytes: float, cpu_max_flops: float
) -> dict[str, Any]:
    """Run one problem's reference like the harness's reference worker: first config, task dtype, then
    float64. Inputs are made on `made_on` (the harness makes them on the CPU, then moves them)."""
    import torch

    from cudasmith.tasks.inputs import build_model, describe_config, make_init_inputs, make_inputs, to_float64
    from cudasmith.tasks.problem import load_module

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    module = load_module(Path(path), "problem")
    config = (getattr(module, "CONFIGS", None) or [{}])[0]
    if device == "cpu":
        described = describe_config(module, config)
        size = described.get("input_bytes", 0) + described.get("output_bytes", 0)
        if "input_bytes" not in described:
            return {"status": "skipped", "reason": f"size unknown on the CPU ({described['unknown']})"}
        if size > cpu_max_bytes or described.get("flops", 0) > cpu_max_flops:
            why = f"{size / 2**20:.0f} MiB, {described.get('flops', 0) / 1e9:.1f} GFLOP"
            return {"status": "skipped", "reason": f"too large for the CPU ({why})"}
    started = time.perf_counter()
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    # Models are built on the CPU and moved, as the harness builds them: a tensor attribute that is not a
    # buffer stays behind, and that is worth finding.
    init_inputs = make_init_inputs(module, config, INIT_SEED)
    model = build_model(module.Model, init_inputs, INIT_SEED, device)
    with torch.device(made_on):
        inputs = make_inputs(module, config, INPUT_SEED, device)
    result: dict[str, Any] = {}
    with torch.no_grad():
        output = model(*inputs)
        outputs = list(output) if isinstance(output, (tuple, list)) else [output]
        if not outputs or any(type(o) is not torch.Tensor for o in outputs):
            kinds = ", ".join(type(o).__name__ for o in outputs) or "nothing"
            return {"status": "failed", "reason": f"forward returned {kinds}, not tensors"}
        if device == "cuda":
            torch.cuda.synchronize()
        result.update(
            status="ran",
            seconds=round(time.perf_counter() - started, 3),
            outputs=[[list(o.shape), str(o.dtype).removeprefix("torch.")] for o in outputs],
        )
        del output, outputs, model
        try:
            model64 = build_model(module.Model, init_inputs, INIT_SEED, device).to(torch.float64)
            model64(*to_float64(inputs))
            if device == "cuda":
                torch.cuda.synchronize()
            result["float64"] = "ok"
        except Exception as exc:  # the harness then judges against the task dtype; worth knowing, not fatal
            result["float64"] = _first_line(exc)
    if device == "cuda":
        result["peak_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    return result


def child(device: str, made_on: str, cpu_max_bytes: float, cpu_max_flops: float) -> None:
    """Worker loop: a problem path per line on stdin, a JSON result per line on the original stdout."""
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever a problem prints goes to stderr, never into the replies
    for line in sys.stdin:
        path = line.strip()
        sticky = False
        try:
            result = run_reference(path, device, made_on, cpu_max_bytes, cpu_max_flops)
        except Exception as exc:
            reason = _first_line(exc)
            if "OutOfMemoryError" in reason:
                reason = "out of GPU memory: " + reason
            result = {"status": "failed", "reason": reason}
            sticky = any(marker in str(exc) for marker in STICKY_CUDA)
        gc.collect()
        if device == "cuda" and not sticky:
            import torch

            torch.cuda.empty_cache()
        replies.write(json.dumps(result) + "\n")
        replies.flush()
        if sticky:
            return


class Runner:
    """The parent's side of the worker: one problem at a time, a deadline each, restart when needed."""

    def __init__(self, args: argparse.Namespace, device: str) -> None:
        self.command = [
            sys.executable,
            __file__,
            "--child",
            device,
            "--made-on",
            "cpu" if args.inputs_on_cpu else device,
            "--cpu-max-mib",
            str(args.cpu_max_mib),
            "--cpu-max-gflop",
            str(args.cpu_max_gflop),
        ]
        self.timeout_s = args.timeout
        self.process: subprocess.Popen[str] | None = None

    def run(self, path: Path) -> dict[str, Any]:
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen(
                self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True
            )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{path}\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], self.timeout_s)
        line = self.process.stdout.readline() if ready else ""
        if line:
            return json.loads(line)
        self.stop()
        if not ready:
            return {"status": "failed", "reason": f"timeout: no result within {self.timeout_s:g} s"}
        return {"status": "failed", "reason": "the worker process died (crash or out of host memory)"}

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


def _level(name: str) -> str:
    return name.split("/")[1] if name.count("/") >= 2 else ""


def _print_table(rows: list[dict[str, Any]], levels: list[str], device: str | None) -> None:
    title = "KernelBench compatibility: " + (f"references run on {device}" if device else "loading only")
    table = Table(title=title, show_edge=False)
    columns = (
        "level",
        "files",
        "loaded",
        "load failed",
        "skipped",
        "ran",
        "run failed",
        "not run",
        "float64 failed",
    )
    for column in columns:
        table.add_column(column, justify="left" if column == "level" else "right")
    for level in sorted({r["level"] for r in rows}, key=lambda v: int(re.sub(r"\D", "", v) or 0)):
        mine = [r for r in rows if r["level"] == level]
        counts = Counter(r["outcome"] for r in mine)
        loaded = len(mine) - counts["load failed"] - counts["skipped"]
        requested = device is not None and level in levels and loaded
        run_columns = (
            (counts["ran"], counts["run failed"], counts["not run"] + counts["pending"])
            if requested
            else ("–", "–", "–")
        )
        floats = sum(1 for r in mine if r.get("float64") not in (None, "ok")) if requested else "–"
        cells = (len(mine), loaded, counts["load failed"], counts["skipped"], *run_columns, floats)
        table.add_row(level, *(str(c) for c in cells))
    output_console().print(table)
    for (level, reason), count in Counter(
        (r["level"], r["reason"]) for r in rows if r["outcome"] == "skipped"
    ).items():
        print(f"{level}: {count} skipped: {reason}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "checkout", type=Path, nargs="?", help="KernelBench checkout (or its KernelBench/ folder)"
    )
    parser.add_argument("--levels", nargs="+", default=["1", "2", "3"], help="levels to run (default 1 2 3)")
    parser.add_argument("--load-only", action="store_true", help="only load the problems; run no reference")
    parser.add_argument("--device", choices=("cuda", "cpu"), help="default: cuda when a GPU is visible")
    parser.add_argument(
        "--results", type=Path, default=Path("kernelbench-compat.jsonl"), help="JSON lines, resumed"
    )
    parser.add_argument("--fresh", action="store_true", help="ignore earlier results in --results")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per problem (default 300)")
    parser.add_argument("--time-budget", type=float, help="start no new problem after this many seconds")
    parser.add_argument("--cpu-max-mib", type=float, default=64.0, help="CPU size guard (default 64 MiB)")
    parser.add_argument("--cpu-max-gflop", type=float, default=2.0, help="CPU size guard (default 2 GFLOP)")
    parser.add_argument(
        "--inputs-on-cpu",
        action="store_true",
        help="make inputs on the CPU and move them, exactly as the harness does (slow for KernelBench's "
        "multi-GB inputs; by default they are made on the device)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--made-on", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.made_on or args.child, args.cpu_max_mib * 2**20, args.cpu_max_gflop * 1e9)
        return 0
    if args.checkout is None:
        parser.error("the KernelBench checkout is required")
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    levels = [f"level{v.removeprefix('level')}" for v in args.levels]
    try:
        listing = load_problem_dir(args.checkout)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    rows: list[dict[str, Any]] = []
    for unloaded in listing.skipped:
        rows.append(
            {
                "name": unloaded.name,
                "level": _level(unloaded.name),
                "outcome": "skipped",
                "reason": unloaded.reason,
            }
        )
    for unloaded in listing.failed:
        rows.append(
            {
                "name": unloaded.name,
                "level": _level(unloaded.name),
                "outcome": "load failed",
                "reason": unloaded.reason,
            }
        )
    done: dict[str, dict[str, Any]] = {}
    if args.results.exists() and not args.fresh and not args.load_only:
        for line in args.results.read_text().splitlines():
            record = json.loads(line)
            if record.get("device") == device:
                done[record["name"]] = record
    to_run = [p for p in listing.problems if _level(p.name) in levels]
    runner = Runner(args, device)
    started = time.monotonic()
    try:
        for index, problem in enumerate(to_run, 1):
            result = done.get(problem.name)
            out_of_time = args.time_budget is not None and time.monotonic() - started > args.time_budget
            if result is None and not args.load_only and not out_of_time:
                result = {"name": problem.name, "device": device, **runner.run(problem.path)}
                with args.results.open("a") as sink:
                    sink.write(json.dumps(result) + "\n")
                took = f" {result['seconds']} s" if "seconds" in result else ""
                console.print(
                    f"[{index}/{len(to_run)}] {problem.name}: {result['status']} {result.get('reason', '')}{took}",
                    highlight=False,
                )
            outcome = {"ran": "ran", "failed": "run failed", "skipped": "not run"}.get(
                (result or {}).get("status", ""), "pending"
            )
            rows.append(
                {"name": problem.name, "level": _level(problem.name), "outcome": outcome, **(result or {})}
            )
    finally:
        runner.stop()
    for problem in listing.problems:
        if _level(problem.name) not in levels:
            rows.append({"name": problem.name, "level": _level(problem.name), "outcome": "not requested"})
    _print_table(rows, levels, None if args.load_only else device)
    problems = [r for r in rows if r["level"] in levels and r["outcome"] != "ran"]
    for row in problems:
        if row["outcome"] in ("load failed", "run failed"):
            print(f"{row['outcome']:>12}  {row['name']}: {row.get('reason', '')}")
    too_large = [r for r in problems if r["outcome"] == "not run" and r["reason"].startswith("too large")]
    if too_large:
        print(
            f"{'not run':>12}  {len(too_large)} problems over the CPU size guard "
            f"({args.cpu_max_mib:g} MiB, {args.cpu_max_gflop:g} GFLOP; --cpu-max-mib and --cpu-max-gflop raise it)"
        )
    for row in problems:
        if row["outcome"] == "not run" and row not in too_large:
            print(f"{'not run':>12}  {row['name']}: {row['reason']}")
    for row in rows:
        if row["level"] in levels and row.get("float64") not in (None, "ok"):
            print(f"{'float64':>12}  {row['name']}: {row['float64']} (the harness judges it against float32)")
    pending = sum(1 for r in problems if r["outcome"] == "pending")
    if pending and not args.load_only:
        print(f"{pending} problems not run yet (time budget): run the same command again to go on")
    failed = [r for r in problems if r["outcome"] in ("load failed", "run failed")]
    return 1 if failed or (pending and not args.load_only) else 0


if __name__ == "__main__":
    sys.exit(main())
