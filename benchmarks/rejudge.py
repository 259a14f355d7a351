"""Re-judging a KernelBench run of our own on a GPU: 23 solutions over levels 1-3 whose authors called
every one correct and fast (benchmarks/rejudge_run: honest kernels, PyTorch and library rewrites,
kernels that keep PyTorch for part of the work, cheats, a race, a constructor build), judged as a user
would: `cudasmith bench RUN --from CHECKOUT --rules kernelbench`.

    python benchmarks/rejudge.py --out rejudge.json     # on the GPU machine

The device's facts (`cudasmith device`: peaks and launch cost, measured once per machine) are measured
first and not counted, as in throughput.py; the bench then runs on empty compile caches, so that every
build is paid for even on a machine that ran it before. Prints the command's output as it comes (its progress, the
re-judge table and its summary), then the wall time per solution (builds included: one load_inline build
of ~45 s among them) against TARGET_S_PER_SOLUTION, and each kernel whose verdict is not one
EXPECTED.json allows. Exit code 1 on such a kernel, or when --budget-s cut the bench off.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from throughput_report import fresh_caches

from cudasmith.report.rejudge import print_rejudge, rejudged
from cudasmith.runtime.cache import cache_dir
from cudasmith.store import RunStore

HERE = Path(__file__).parent / "rejudge_run"
# The bar: wall time per solution of the whole re-judge, builds included.
TARGET_S_PER_SOLUTION = 12.0
# The whole re-judge at most (the target is 23 x 12 s = 276 s), and how long a stopped bench may take to
# store what it judged.
BUDGET_S = 600.0
STOP_GRACE_S = 30.0


def fresh_env(scratch: Path) -> dict[str, str]:
    """Empty compile caches holding only the device's facts (measured apart, first), and wide output for
    the table."""
    return dict(os.environ, COLUMNS="160", **fresh_caches(scratch, cache_dir("device")))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--rules", default="kernelbench")
    parser.add_argument("--out", type=Path, help="write the numbers here (JSON)")
    parser.add_argument(
        "--budget-s",
        type=float,
        default=BUDGET_S,
        help=f"stop the bench after this many seconds and report what it judged (default {BUDGET_S:g})",
    )
    parser.add_argument("--in-flight", type=int, help="candidates in flight (the bench's --in-flight)")
    args = parser.parse_args()
    expected: dict[str, list[str]] = json.loads((HERE / "EXPECTED.json").read_text())
    with tempfile.TemporaryDirectory() as scratch:
        store_path = Path(scratch) / "runs.db"
        command = [
            sys.executable,
            "-m",
            "cudasmith",
            "bench",
            str(HERE / "run"),
            "--from",
            str(HERE / "checkout"),
            "--device",
            args.device,
            "--rules",
            args.rules,
            "--store",
            str(store_path),
        ]
        if args.in_flight is not None:
            command += ["--in-flight", str(args.in_flight)]
        # The device's peaks (for % of speed of light) are measured once per machine and cached, as in
        # throughput.py: measured here first, apart, so the time per solution is the re-judge's own.
        facts_started = time.monotonic()
        facts = subprocess.run(
            [sys.executable, "-m", "cudasmith", "device", "--json", "--device", args.device],
            capture_output=True,
            text=True,
            check=False,
        )
        facts_s = time.monotonic() - facts_started
        print(
            f"[rejudge] the device's facts (cudasmith device, once per machine, not counted): {facts_s:.1f} s, "
            f"exit code {facts.returncode}"
        )
        env = fresh_env(Path(scratch))
        started = time.monotonic()
        # The command's own output (its progress, then the table) goes straight through, so a run cut
        # off by --budget-s or by the caller still shows how far it got.
        with subprocess.Popen(command, env=env) as bench:
            try:
                code = bench.wait(timeout=args.budget_s)
            except subprocess.TimeoutExpired:
                print(f"[rejudge] --budget-s {args.budget_s:g} s ran out: stopping the bench as Ctrl-C would")
                bench.send_signal(signal.SIGINT)
                try:
                    code = bench.wait(timeout=STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    bench.kill()
                    code = bench.wait()
        wall_s = time.monotonic() - started
        runs = []
        if store_path.exists():
            with RunStore(store_path) as store:
                runs = store.runs()
                kernels = rejudged(store.candidates(runs[-1].id)) if runs else []
        if not runs:
            print(f"[rejudge] the bench stored no run (exit code {code})", file=sys.stderr)
            return 1
    per_solution = wall_s / max(1, len(kernels))
    cut = len(kernels) < len(expected)
    wrong = {
        k.file: (k.kind, expected.get(k.file)) for k in kernels if k.kind not in expected.get(k.file, [])
    }
    print(
        f"{len(kernels)} solutions in {wall_s:.0f} s: {per_solution:.1f} s per solution "
        f"(target {TARGET_S_PER_SOLUTION:g} s), builds included"
        + (f"; {len(expected) - len(kernels)} of {len(expected)} not judged (cut off)" if cut else "")
    )
    if cut:  # the bench printed no table of its own
        print_rejudge(kernels, Console(width=160))
    for name, (got, allowed) in wrong.items():
        print(f"UNEXPECTED {name}: {got} (expected one of {allowed})")
    if args.out:
        numbers = {
            "wall_s": wall_s,
            "solutions": len(kernels),
            "s_per_solution": per_solution,
            "kinds": {k.file: k.kind for k in kernels},
            "unexpected": wrong,
            "not_judged": len(expected) - len(kernels),
            "exit_code": code,
            "device_facts_s": facts_s,
        }
        args.out.write_text(json.dumps(numbers, indent=2))
    return 1 if wrong or cut or code != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
