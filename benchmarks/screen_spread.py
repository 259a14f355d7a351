"""How far the screen (timing/protocol.screen_plan) is from the full protocol: the figure that sets the default
margin of screen-then-confirm (timing/protocol.SCREEN_MARGIN, harness/confirm.py).

    python benchmarks/screen_spread.py                                       # on the GPU machine
    python benchmarks/screen_spread.py --device cpu --tasks level1/vector_add \\
        --solutions tests/solutions/vector_add_cpu.py                        # plumbing, on a CPU

Every correct kernel of the no-build stream's first --per-task variants of each task (stream_nobuild.py) is
judged in a session that screens and confirms every one of them (the screen's decision is overruled, here
only), so each verdict has both: per config the screen's median and interval, and the full protocol's
median. The pessimism of a screen is how much slower it made the kernel than the full protocol did beyond
its own interval: the low end of its 95 % interval over the full median, less one (per config), and the
candidate's full speedup over its screened reach, less one (per kernel: what the decision reads). The
suggested margin is twice the worst pessimism per kernel, rounded up to a whole per cent, at least 5 %.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from stream_variants import write_kind

MARGIN_FLOOR = 0.05


def measure(task: str, solutions: list[Path], device: str) -> list[dict[str, Any]]:
    """Judge `solutions` in one session that confirms every screen; per kernel its screens and full times."""
    from cudasmith.harness import timed
    from cudasmith.harness.confirm import decide
    from cudasmith.harness.options import EvalOptions
    from cudasmith.harness.session import Judge
    from cudasmith.timing.protocol import SCREEN_MARGIN

    screens: dict[str, list[Any]] = {}

    def confirm_all(found: list[Any], bar: float, margin: float, seconds: float = 0.0) -> Any:
        report = decide(found, bar, margin, seconds)
        report.confirmed = True  # every screen is followed by the full protocol, to compare the two
        screens[_current()] = found
        return report

    timed.decide = confirm_all  # type: ignore[assignment]
    options = EvalOptions(device=device, baselines=("eager",), confirm_margin=SCREEN_MARGIN)
    kernels = []
    with Judge(task=task, options=options, candidates=len(solutions)) as judge:
        for path, verdict in zip(solutions, judge.judge_many(_tracked(solutions)), strict=True):
            if not verdict.correct or verdict.speedup is None or str(path) not in screens:
                continue
            found = screens[str(path)]
            full = [c.time_ms for c in verdict.configs]
            per_config = [
                min(s.timing.ci95_ms[0], s.timing.median_ms) / ms - 1
                for s, ms in zip(found, full, strict=True)
                if ms
            ]
            reach = verdict.screen.reach if verdict.screen else None
            kernels.append(
                {
                    "task": task,
                    "solution": path.name,
                    "speedup": verdict.speedup,
                    "reach": reach,
                    "screened": verdict.screen.speedup if verdict.screen else None,
                    "pessimism": verdict.speedup / reach - 1 if reach else None,
                    "config_pessimism": per_config,
                    "screen_ms": [s.timing.median_ms for s in found],
                    "full_ms": full,
                }
            )
    return kernels


_THREAD_SOLUTION: dict[int, str] = {}


def _tracked(solutions: list[Path]) -> list[Path]:
    """The solutions, each remembered by the thread that judges it (the screen's hook reads it back)."""
    import threading

    from cudasmith.harness import session

    original = session.Judge.judge

    def judge(self: Any, solution: Any) -> Any:
        _THREAD_SOLUTION[threading.get_ident()] = str(solution)
        return original(self, solution)

    session.Judge.judge = judge  # type: ignore[method-assign]
    return solutions


def _current() -> str:
    import threading

    return _THREAD_SOLUTION.get(threading.get_ident(), "?")


def suggested_margin(kernels: list[dict[str, Any]]) -> float:
    """Twice the worst pessimism per kernel, rounded up to a whole per cent, at least MARGIN_FLOOR."""
    worst = max((k["pessimism"] for k in kernels if k["pessimism"] is not None), default=0.0)
    return max(MARGIN_FLOOR, math.ceil(200 * max(worst, 0.0)) / 100)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--tasks", help="comma-separated (default: the no-build stream's)")
    parser.add_argument(
        "--per-task", type=int, default=8, help="the stream's first variants per task (default 8)"
    )
    parser.add_argument("--solutions", type=Path, nargs="*", help="judge these instead (one task: --tasks)")
    parser.add_argument("--out", type=Path, help="write every number here (JSON)")
    args = parser.parse_args()
    tasks = tuple(args.tasks.split(",")) if args.tasks else None
    if args.solutions:
        if not tasks or len(tasks) != 1:
            sys.exit("--solutions needs the one task they solve (--tasks)")
        by_task = {tasks[0]: list(args.solutions)}
    else:
        folder = Path(tempfile.mkdtemp(prefix="cudasmith-screen-spread-"))
        expected = write_kind(folder, "nobuild", tasks, args.per_task)
        by_task = {}
        for name, status in expected.items():
            if status == "correct":
                by_task.setdefault(str(Path(name).parent), []).append(folder / name)
    kernels = [k for task, paths in by_task.items() for k in measure(task, paths, args.device)]
    for k in kernels:
        configs = ", ".join(f"{p:+.1%}" for p in k["config_pessimism"])
        print(
            f"{k['task']} {k['solution']}: full {k['speedup']:.3f}x, screened {k['screened'] or 0:.3f}x "
            f"(reach {k['reach'] or 0:.3f}x): pessimism {k['pessimism'] or 0:+.1%}; per config {configs}"
        )
    values = [k["pessimism"] for k in kernels if k["pessimism"] is not None]
    if values:
        print(
            f"pessimism per kernel over {len(values)}: median {statistics.median(values):+.1%}, worst "
            f"{max(values):+.1%}; suggested margin {suggested_margin(kernels):.0%} (timing/protocol.SCREEN_MARGIN)"
        )
    if args.out:
        args.out.write_text(json.dumps(kernels, indent=2))
    return 0 if values else 1


if __name__ == "__main__":
    sys.exit(main())
