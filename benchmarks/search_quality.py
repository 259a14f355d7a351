"""How good is the search with a given model? `optimize` over every task of a level, then correctness,
fast_p and the geometric-mean speedup of the best kernels against eager PyTorch and torch.compile.

    python benchmarks/search_quality.py --model openai:gpt-5-mini --level level1 [--strategy fsr]
        [-n 4] [--depth 5] [--budget 20] [--tasks level1/relu,level1/softmax] [--store runs/quality.db] [--json]

It needs a model endpoint (a key in OPENAI_API_KEY or ANTHROPIC_API_KEY, or a local OpenAI-compatible
server) and a GPU; the workplace's machines reach no model endpoint, so it was never run there. Each
task's run goes into the store; a task whose run for the same model and strategy finished already is
not run again, and a crashed one is resumed, so the script can be stopped and started at will.
`--budget` is per task. fast_p is the share of all tasks (failed ones count) whose best kernel is
correct and more than p times faster than the baseline.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from cudasmith.errors import CudasmithError, UsageError

P_VALUES = (0.0, 1.0, 1.5, 2.0)
BASELINES = ("eager", "compile")


def _existing(store: Any, task: str, model: str, strategy: str) -> Any:
    """The latest run of this task with this model and strategy, if any."""
    runs = [r for r in store.runs("optimize", task) if r.models == [model] and r.strategy == strategy]
    return runs[-1] if runs else None


def _best_speedups(store: Any, run_id: str) -> dict[str, float] | None:
    """The best correct kernel's speedup against each baseline; None when nothing was correct."""
    correct = [c for c in store.candidates(run_id) if c.status == "correct"]
    if not correct:
        return None
    top = max(correct, key=lambda c: c.verdict.speedup or 0.0)
    return dict(top.verdict.speedups)


def metrics(results: dict[str, dict[str, float] | None]) -> dict[str, Any]:
    """Correctness, fast_p and geometric means over the tasks' best kernels."""
    tasks = len(results) or 1
    correct = [s for s in results.values() if s is not None]
    report: dict[str, Any] = {
        "tasks": len(results),
        "correct": len(correct),
        "correctness": len(correct) / tasks,
    }
    for baseline in BASELINES:
        values = [s[baseline] for s in correct if s.get(baseline)]
        report[f"fast_p_{baseline}"] = {str(p): sum(v > p for v in values) / tasks for p in P_VALUES}
        report[f"geomean_{baseline}"] = (
            math.exp(sum(math.log(v) for v in values) / len(values)) if values else None
        )
    return report


def _checked(args: argparse.Namespace) -> list[Any]:
    """The problems to search, once everything the runs need is known to be there (the device, the
    model's client, the tasks): a bad input stops the script before any work, and before the store."""
    from cudasmith.device import usable_device
    from cudasmith.llm import load_llm_config, make_client
    from cudasmith.search.ask import load_problem_or_task
    from cudasmith.tasks.problem import list_task_names

    usable_device(args.device)
    make_client(args.model, load_llm_config())
    names = (
        args.tasks.split(",")
        if args.tasks
        else [t for t in list_task_names() if t.startswith(f"{args.level}/")]
    )
    if not names:
        raise UsageError(f"no tasks in level {args.level!r} (cudasmith tasks lists the levels)")
    return [load_problem_or_task(name) for name in names]


def _search_all(
    args: argparse.Namespace, problems: list[Any]
) -> tuple[dict[str, dict[str, float] | None], float]:
    """Each task's best speedups (None: nothing correct) and the known cost, running what is not done."""
    from cudasmith.harness.options import EvalOptions
    from cudasmith.search.config import OptimizeConfig, SearchSettings
    from cudasmith.search.optimize import optimize
    from cudasmith.store import RunStore

    results: dict[str, dict[str, float] | None] = {}
    cost = 0.0
    for index, problem in enumerate(problems, start=1):
        with RunStore(args.store) as store:
            previous = _existing(store, problem.name, args.model, args.strategy)
        if previous is None or previous.status != "finished":
            print(f"[{index}/{len(problems)}] {problem.name}", file=sys.stderr)
            search = OptimizeConfig(strategy=args.strategy, n=args.n, depth=args.depth)
            judge = EvalOptions(device=args.device, baselines=BASELINES)
            optimize(
                None if previous else problem,
                args.model,
                SearchSettings(search, judge, budget_usd=args.budget),
                store=args.store,
                resume=previous.id if previous else None,
            )
        with RunStore(args.store) as store:
            run = _existing(store, problem.name, args.model, args.strategy)
            results[problem.name] = _best_speedups(store, run.id)
            cost += ((run.summary or {}).get("cost") or {}).get("known_usd") or 0.0
    return results, cost


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", "-m", required=True)
    parser.add_argument("--level", default="level1")
    parser.add_argument("--tasks", help="comma-separated task names instead of a whole level")
    parser.add_argument("--strategy", default="fsr", choices=("fsr", "evolve"))
    parser.add_argument("--n", "-n", type=int, default=4)
    parser.add_argument("--depth", type=int, default=5)
    parser.add_argument("--budget", type=float, help="US$ per task")
    parser.add_argument("--device", "-d", default="cuda")
    parser.add_argument("--store", type=Path, default=Path("runs") / "quality.db")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    try:
        results, cost = _search_all(args, _checked(args))
    except CudasmithError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    report = {"model": args.model, "strategy": args.strategy, **metrics(results), "known_cost_usd": cost}
    report["per_task"] = results
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{args.model} · {args.strategy} · {report['tasks']} tasks · known cost US${cost:.2f}")
    print(f"correct: {report['correct']} of {report['tasks']} ({report['correctness']:.0%})")
    for baseline in BASELINES:
        fast = ", ".join(
            f"fast_{p:g} {share:.0%}"
            for p, share in zip(P_VALUES, report[f"fast_p_{baseline}"].values(), strict=True)
        )
        geomean = report[f"geomean_{baseline}"]
        shown = "–" if geomean is None else f"{geomean:.2f}x"
        print(f"vs {baseline}: {fast}; geomean of correct {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
