"""Candidates judged per minute on one lane and on every lane, through the local executor and through
Ray, on one fixed batch, side by side in one run.

    python benchmarks/scaling.py                          # 1 lane, then 2, local and ray
    python benchmarks/scaling.py --budget-s 420           # every row within its share of 7 minutes
    python benchmarks/scaling.py --executors local        # without Ray
    python benchmarks/scaling.py --device cpu --lanes 1,2 --repeat 1 --quick   # the CPU smoke (CI)

The batch is benchmarks/candidates (NVRTC, Triton and load_inline kernels over level-1 tasks, correct and
wrong ones, one that crashes; the hanging one only with --with-hangs), each file judged --repeat times,
all queued at once. On the CPU it is the C kernels of the tests. Each row starts its executor cold
(sessions, baselines and builds are in its wall time; a Ray row also starts and stops its Ray instance
unless --address is given) and must give every candidate its expected status.

Each row is printed when it is done, with a line as each candidate finishes (how many each lane has
judged so far). With --budget-s, each row gets an equal share; a row that runs out is stopped and says
what it had done.

Columns: candidates per minute of wall time; the ratio to one lane of the same executor; lane busy (the
mean share of the wall time each lane spent judging a candidate); NVML utilization (see exec/nvml.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
GPU_BATCH = ROOT / "benchmarks" / "candidates"
CPU_BATCH = {
    "tests/solutions/optimize/add_fast.py": ("tests/problems/add_small.py", "correct"),
    "tests/solutions/optimize/add_slow.py": ("tests/problems/add_small.py", "correct"),
    "tests/solutions/optimize/add_wrong.py": ("tests/problems/add_small.py", "incorrect"),
    "tests/solutions/optimize/add_compile_error.py": ("tests/problems/add_small.py", "compile_error"),
    "tests/solutions/vector_add_cpu.py": ("level1/vector_add", "correct"),
    "tests/solutions/softmax_cpu_unnormalised.py": ("level1/softmax", "incorrect"),
}
console = Console(stderr=True, highlight=False)
# The lane counts the README quotes: one lane, then two (a GPU each; on the CPU, a session each).
DEFAULT_LANES = (1, 2)


@dataclass
class Row:
    """One executor with one number of lanes over the whole batch."""

    executor: str
    lanes: int
    candidates: int
    wall_s: float
    per_minute: float
    busy_fraction: float | None
    gpu_utilization: float | None
    built_ahead: int
    unexpected: list[str] = field(default_factory=list)
    error: str = ""
    ratio: float | None = None


def batch(device: str, with_hangs: bool, tasks: list[str] | None) -> list[tuple[Path, str, str]]:
    """(solution, task or problem file, expected status) for every candidate of the batch."""
    if device == "cpu":
        return [(ROOT / s, str(ROOT / t) if t.endswith(".py") else t, e) for s, (t, e) in CPU_BATCH.items()]
    expected: dict[str, str] = json.loads((GPU_BATCH / "EXPECTED.json").read_text())
    chosen = []
    for name, status in expected.items():
        task = str(Path(name).parent)
        if (status == "timeout" and not with_hangs) or (tasks and task not in tasks):
            continue
        chosen.append((GPU_BATCH / name, task, status))
    return chosen


def jobs(
    candidates: list[tuple[Path, str, str]], repeat: int, quick: bool, device: str
) -> list[tuple[Any, str]]:
    from cudasmith.exec import Job, ProblemRef
    from cudasmith.harness.options import EvalOptions
    from cudasmith.tasks.lookup import find_named

    options = EvalOptions(device=device, seeds_per_config=1 if quick else 3, seed=20261123)
    made = []
    for round_ in range(repeat):
        for solution, task, status in candidates:
            problem = find_named(task, None)
            source = solution.read_text()
            key = f"{round_}/{solution.name}"
            made.append(
                (Job(key, ProblemRef.of(problem), options, source, solution.name, str(solution)), status)
            )
    return made


def lane_counts_now(executor: Any) -> str:
    """How many candidates each lane has judged so far, in one line."""
    return ", ".join(f"{lane.name} {lane.judged}" for lane in executor.stats().lanes)


def measure(
    kind: str,
    device: str,
    lanes: int,
    work: list[tuple[Any, str]],
    args: argparse.Namespace,
    share_s: float | None = None,
) -> Row:
    """One row: the batch through `kind` with `lanes` lanes, stopped after `share_s` seconds if given."""
    from cudasmith.exec.local import LocalExecutor, lane_devices
    from cudasmith.exec.ray_executor import RayExecutor

    started = time.monotonic()
    try:
        if kind == "local":
            devices = ["cpu"] * lanes if device == "cpu" else lane_devices(device, str(lanes))
            executor: Any = LocalExecutor(devices, args.build_workers)
        else:
            executor = RayExecutor(device, lanes, args.address, args.build_workers)
    except Exception as exc:  # Ray missing, too few GPUs: the row says so and the run goes on
        return Row(kind, lanes, 0, 0.0, 0.0, None, None, 0, error=f"{type(exc).__name__}: {exc}")
    deadline = None if share_s is None else started + share_s
    with executor:
        pending = {executor.submit(job): (job, expected) for job, expected in work}
        unexpected: list[str] = []
        while pending:
            left = None if deadline is None else deadline - time.monotonic()
            done, _ = wait(pending, timeout=left, return_when=FIRST_COMPLETED)
            if not done:  # out of its share: say what it had done, then stop its lanes
                wall = time.monotonic() - started
                finished = len(work) - len(pending)
                error = (
                    f"out of its {share_s:.0f} s share: {finished}/{len(work)} judged "
                    f"(lanes: {lane_counts_now(executor)}), {len(unexpected)} unexpected"
                )
                console.print(f"  {kind}, {lanes} lanes: {error}")
                return Row(kind, lanes, finished, round(wall, 2), round(60 * finished / wall, 2),
                           None, None, 0, unexpected, error)  # fmt: skip
            for future in done:
                job, expected = pending.pop(future)
                try:
                    status = str(future.result().status)
                except Exception as exc:  # the judge's own failure counts against the row
                    status = f"{type(exc).__name__}: {exc}"
                if status != expected:
                    unexpected.append(f"{job.key}: {status} (expected {expected})")
                console.print(
                    f"  {time.monotonic() - started:7.1f} s  {len(work) - len(pending):3d}/{len(work)} "
                    f"{job.key}: {status}{'' if status == expected else ' (UNEXPECTED)'} · judged per lane: "
                    f"{lane_counts_now(executor)}"
                )
        wall = time.monotonic() - started
        stats = executor.stats()
    used = list(stats.gpu_utilization.values())
    utilization = sum(used) / len(used) if used else None
    per_minute = round(60 * len(work) / wall, 2)
    return Row(
        kind,
        lanes,
        len(work),
        round(wall, 2),
        per_minute,
        stats.busy_fraction,
        utilization,
        stats.built,
        unexpected,
    )


def lane_counts(spec: str | None) -> list[int]:
    """The lane counts of the rows: those given, else one lane then two, on a GPU machine and on the CPU
    alike (the README's numbers are for two)."""
    return [int(part) for part in spec.split(",")] if spec else list(DEFAULT_LANES)


def print_table(rows: list[Row], device: str) -> None:
    from cudasmith.device import software_versions
    from cudasmith.hardware import device_name

    versions = software_versions()
    title = f"scaling on {device_name(device)} ({device}), torch {versions.get('torch')}"
    table = Table(title=title)
    columns = ("executor", "lanes", "candidates", "wall s", "per minute", "vs 1 lane", "lane busy")
    for column in (*columns, "NVML util", "built ahead", "unexpected"):
        table.add_column(column, justify="left" if column in {"executor", "unexpected"} else "right")
    for row in rows:
        if row.error:
            table.add_row(row.executor, str(row.lanes), "–", "–", "–", "–", "–", "–", "–", row.error)
            continue
        table.add_row(
            row.executor,
            str(row.lanes),
            str(row.candidates),
            f"{row.wall_s:.1f}",
            f"{row.per_minute:.1f}",
            "–" if row.ratio is None else f"{row.ratio:.2f}x",
            "–" if row.busy_fraction is None else f"{row.busy_fraction:.0%}",
            "–" if row.gpu_utilization is None else f"{row.gpu_utilization:.0%}",
            str(row.built_ahead),
            "; ".join(row.unexpected) or "none",
        )
    Console(width=200).print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="cuda or cpu [default: cuda when a GPU is visible]")
    parser.add_argument("--executors", default="local,ray", help="comma-separated: local, ray")
    parser.add_argument("--lanes", default=None, help="lane counts, e.g. 1,2,4 [default: 1,2]")
    parser.add_argument("--repeat", type=int, default=2, help="times each file of the batch is judged")
    parser.add_argument("--tasks", default=None, help="only these tasks of the GPU batch, comma-separated")
    parser.add_argument("--with-hangs", action="store_true", help="keep the kernel that never ends")
    parser.add_argument("--quick", action="store_true", help="one input set per config")
    parser.add_argument("--address", default=None, help="a running Ray cluster's address")
    parser.add_argument("--build-workers", type=int, default=None, help="builds ahead at once")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument(
        "--budget-s", type=float, default=None, help="the whole run's seconds, split over rows"
    )
    args = parser.parse_args()
    from cudasmith.device import default_device

    device = args.device or default_device()
    chosen = batch(device, args.with_hangs, args.tasks.split(",") if args.tasks else None)
    work = jobs(chosen, args.repeat, args.quick, device)
    rows: list[Row] = []
    plan = [(kind, lanes) for kind in args.executors.split(",") for lanes in lane_counts(args.lanes)]
    share = None if args.budget_s is None else args.budget_s / len(plan)
    for kind, lanes in plan:
        console.print(f"{kind}, {lanes} lanes: {len(work)} candidates …")
        rows.append(measure(kind, device, lanes, work, args, share))
        first = next((r for r in rows if r.executor == kind and r.lanes == 1 and not r.error), None)
        if first is not None and not rows[-1].error:
            rows[-1].ratio = rows[-1].per_minute / first.per_minute
        print_table(rows[-1:], device)  # each row as soon as it is done
    if len(rows) > 1:
        print_table(rows, device)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2) + "\n")
    if any(row.unexpected for row in rows) or all(row.error for row in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
