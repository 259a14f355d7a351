"""Nothing waits on a build: `cudasmith eval` of several load_inline solutions in one call, on empty caches.

    python benchmarks/eval_builds.py                       # on the GPU machine: 3 solutions, eval as a user runs it
    python benchmarks/eval_builds.py --serial              # and, for comparison, the same judged one by one
                                                           # in one session without builds ahead (~200 s on an H100)

The solutions are copies of the batch's load_inline ReLU (benchmarks/candidates/level1/relu/inline_relu.py),
each with a comment of its own in its CUDA source, so that each is a build of its own (~45 s of nvcc and
the host compiler). `cudasmith eval` sends every build to its build pool before judging (exec/ahead.py);
the serial row judges the same files with Judge.judge, one after another, each building in its judged
worker. Each row gets empty compile caches. Prints a table: row, solutions, wall seconds, statuses.
Target (issue 21): three solutions in one eval in at most TARGET_S on an H100.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from throughput_report import fresh_caches

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "benchmarks" / "candidates" / "level1" / "relu" / "inline_relu.py"
TASK = "level1/relu"
TARGET_S = 90.0
# One eval of builds that take ~45 s each, however they are scheduled, ends well within this.
EVAL_TIMEOUT_S = 600.0
# The serial row, in a child: Judge.judge of each file in turn, verdict statuses on stdout as JSON.
SERIAL = """
import json, sys
from cudasmith import Judge
with Judge(task=sys.argv[1], device="cuda", candidates=len(sys.argv) - 2) as judge:
    print(json.dumps([judge.judge(path).status.value for path in sys.argv[2:]]))
"""


def copies(folder: Path, count: int) -> list[Path]:
    """`count` copies of the load_inline solution, each a build of its own."""
    source = SOLUTION.read_text()
    marker = "constexpr int THREADS = 256;"
    assert source.count(marker) == 1, f"{SOLUTION} changed: no {marker!r}"
    paths = []
    for index in range(count):
        path = folder / f"inline_relu_{index}.py"
        path.write_text(source.replace(marker, f"// build {index} of eval_builds.py\n{marker}"))
        paths.append(path)
    return paths


def fresh_env(folder: Path) -> dict[str, str]:
    """Empty caches of their own (the device's facts measured again too, as on a user's first run), and
    this checkout's cudasmith first."""
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
    return dict(os.environ, PYTHONPATH=path, **fresh_caches(folder))


def run(command: list[str], env: dict[str, str]) -> tuple[float, str, str]:
    """Run one row's command; its progress lines (stderr, with their seconds) are echoed as they come, so
    that a slow row shows where its time went."""
    started = time.monotonic()
    with subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        lines: list[str] = []
        outputs: list[str] = []

        def echo() -> None:
            for line in process.stderr:  # type: ignore[union-attr]
                lines.append(line)
                print(f"  | {line.rstrip()}", flush=True)

        readers = [
            threading.Thread(target=echo, daemon=True),
            threading.Thread(target=lambda: outputs.append(process.stdout.read()), daemon=True),  # type: ignore[union-attr]
        ]
        for reader in readers:
            reader.start()
        try:
            process.wait(timeout=EVAL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for reader in readers:
            reader.join(timeout=5)
        out = "".join(outputs)
    return time.monotonic() - started, out, "".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--solutions", type=int, default=3, help="load_inline solutions in the eval (default 3)"
    )
    parser.add_argument(
        "--serial", action="store_true", help="also judge them one by one, without builds ahead"
    )
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="cudasmith-eval-builds-") as directory:
        folder = Path(directory)
        paths = copies(folder, args.solutions)
        command = [sys.executable, "-m", "cudasmith", "eval", *map(str, paths), "--task", TASK, "--json"]
        print(f"[eval_builds] cudasmith eval of {len(paths)} load_inline solutions, builds ahead", flush=True)
        seconds, out, err = run(command, fresh_env(folder / "ahead"))
        statuses = [json.loads(line)["status"] for line in out.splitlines() if line.startswith("{")]
        rows.append(("eval, builds ahead", seconds, statuses, err))
        if args.serial:
            print(
                "[eval_builds] the same, one by one in one session, each building in its worker", flush=True
            )
            command = [sys.executable, "-c", SERIAL, TASK, *map(str, paths)]
            seconds, out, err = run(command, fresh_env(folder / "serial"))
            statuses = json.loads(out.strip().splitlines()[-1]) if out.strip() else []
            rows.append(("one by one, no builds ahead", seconds, statuses, err))
    print(f"\n{'row':<30} {'solutions':>9} {'wall s':>8}  statuses")
    for name, seconds, statuses, err in rows:
        shown = ", ".join(statuses) or f"none ({' | '.join(err.strip().splitlines()[-2:])[:200]})"
        print(f"{name:<30} {args.solutions:>9} {seconds:>8.1f}  {shown}")
    ahead_s = rows[0][1]
    verdict = "PASS" if ahead_s <= TARGET_S and rows[0][2] == ["correct"] * args.solutions else "FAIL"
    print(
        f"\n{args.solutions} load_inline solutions in one eval: {verdict} ({ahead_s:.0f} s, target ≤ {TARGET_S:.0f} s)"
    )


if __name__ == "__main__":
    main()
