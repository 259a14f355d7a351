"""A bench of a model over a set of tasks: per task, one search by the optimize driver (`one-shot`: one
request for k answers; `fsr` and `evolve`: their rounds, k candidates per round), all in the run store.

The bench run records each task's search run as an event (`task-run`), written even when the search is
interrupted; a search killed before that (kill -9) is found again by its task and start time. So a
resumed bench finishes the unfinished searches (`optimize(resume=…)`: no stored answer asked for
again, no stored verdict judged again) and starts the tasks not yet begun.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cudasmith.bench.folder import BenchResult, scope
from cudasmith.errors import UsageError
from cudasmith.exec import Lanes
from cudasmith.harness.options import EvalOptions
from cudasmith.llm import LLMConfig, load_llm_config, make_client
from cudasmith.search.config import OptimizeConfig
from cudasmith.search.optimize import optimize
from cudasmith.store import Run, RunStore, code_hash
from cudasmith.store.runs import load_run, task_runs
from cudasmith.store.start import new_run
from cudasmith.tasks.problem import Problem, load_problem
from cudasmith.timestamps import STORE_TIMESPEC, now_iso

MODEL_STRATEGIES = ("one-shot", "fsr", "evolve")
# Told before each task's search starts: (task, its index, tasks in all).
OnTask = Callable[[str, int, int], None]


@dataclass(frozen=True)
class ModelBench:
    """What a model bench asks: models, strategy, k samples per task (candidates per round for fsr and
    evolve), rounds (fsr and evolve; default the [optimize] settings) and a budget over all tasks."""

    models: tuple[str, ...]
    strategy: str = "one-shot"
    k: int = 1
    depth: int | None = None
    budget_usd: float | None = None


def _new_run(store: RunStore, problems: list[Problem], spec: ModelBench, options: EvalOptions) -> Run:
    run = new_run(
        "bench",
        scope([p.name for p in problems]),
        code_hash("\n".join(f"{p.name} {p.source_hash}" for p in problems)),
        options.device,
        options.seed,
        strategy=spec.strategy,
        models=list(spec.models),
        options={
            "tasks": [{"name": p.name, "path": str(p.path), "version": p.source_hash} for p in problems],
            "k": spec.k,
            "depth": spec.depth,
            "budget_usd": spec.budget_usd,
            "judge": options.stored(),
            # The seed the user fixed for every search (each draws its own otherwise).
            "judge_seed": options.seed,
        },
    )
    # Its searches' folders go inside its own, not beside the store (a level is dozens of searches).
    run.directory = str(store.path.parent / run.id)
    return store.create_run(run)


def _resumed(store: RunStore, run_id: str) -> tuple[Run, list[Problem], ModelBench, EvalOptions]:
    run = store.run(run_id)
    if run.kind != "bench" or run.strategy not in MODEL_STRATEGIES:
        raise UsageError(f"run {run_id} is not a bench of a model")
    problems = []
    for task in run.options["tasks"]:
        problem = load_problem(task["path"], name=task["name"])
        if problem.source_hash != task["version"]:
            raise UsageError(f"{task['path']} changed since bench {run_id} began; start a new bench")
        problems.append(problem)
    spec = ModelBench(
        tuple(run.models),
        run.strategy or "one-shot",
        run.options["k"],
        run.options["depth"],
        run.options["budget_usd"],
    )
    return run, problems, spec, EvalOptions.from_stored(run.options["judge"], run.options.get("judge_seed"))


def _search_run(store: RunStore, bench: Run, task: str) -> Run | None:
    """The task's search run: as recorded, else one started after the task's recorded start (kill -9)."""
    recorded = task_runs(store, bench).get(task)
    if recorded is not None:
        return recorded
    starts = store.events(bench.id, kind="task-start")
    started = next((e.data["started_at"] for e in starts if e.data["task"] == task), None)
    if started is None:
        return None
    later = [r for r in store.runs(kind="optimize", task=task) if r.created_at >= started]
    return later[-1] if later else None


def _spent(store: RunStore, bench: Run) -> float:
    """US dollars the bench's searches spent so far (answers of unknown price count as nothing here)."""
    return sum(
        completion.cost_usd or 0.0
        for search in task_runs(store, bench).values()
        for call in store.calls(search.id)
        for completion in call.completions
    )


def bench_model(
    store: RunStore,
    problems: list[Problem] | None = None,
    spec: ModelBench | None = None,
    options: EvalOptions | None = None,
    llm_config: LLMConfig | None = None,
    config: OptimizeConfig | None = None,
    resume: str | None = None,
    on_task: OnTask | None = None,
    lanes: Lanes | None = None,
) -> BenchResult:
    """Run `spec`'s model over `problems`, one search per task, into a new bench run of `store`, or go on
    with the bench run `resume`; each search judges on `lanes` (default: a session on each visible GPU)."""
    if resume is not None:
        run, problems, spec, options = _resumed(store, resume)
    else:
        if not problems or spec is None:
            raise UsageError("give the tasks and the model to bench, or --resume RUN")
        if spec.strategy not in MODEL_STRATEGIES:
            raise UsageError(f"unknown strategy {spec.strategy!r}; choose from {', '.join(MODEL_STRATEGIES)}")
        if spec.k < 1:
            raise UsageError("-n must be at least 1")
        options = options or EvalOptions()
    (lanes or Lanes()).check(options.device)
    # Every model's client is made first: a missing key or SDK fails in one line before any task starts.
    llm_config = llm_config or load_llm_config()
    for model in spec.models:
        make_client(model, llm_config)
    if resume is None:
        run = _new_run(store, problems, spec, options)
    settings = {
        "strategy": spec.strategy,
        "n": spec.k,
        "depth": 1 if spec.strategy == "one-shot" else spec.depth,
    }
    search_config = (
        config.model_copy(update={k: v for k, v in settings.items() if v is not None}) if config else None
    )
    common: dict[str, Any] = {
        "store": store.path,
        "llm_config": llm_config,
        "device": options.device,
        **(lanes or Lanes()).as_kwargs(),
    }
    try:
        for index, problem in enumerate(problems):
            search = _search_run(store, run, problem.name)
            if search is not None and search.status == "finished":
                continue
            if on_task:
                on_task(problem.name, index, len(problems))
            budget = None if spec.budget_usd is None else max(0.0, spec.budget_usd - _spent(store, run))
            if search is None:
                store.add_event(
                    run.id,
                    f"start/{problem.name}",
                    "task-start",
                    {"task": problem.name, "started_at": now_iso(STORE_TIMESPEC)},
                )
            try:
                if search is not None:
                    optimize(resume=search.id, budget=budget, **common)
                else:
                    optimize(
                        problem,
                        list(spec.models),
                        **settings,
                        config=search_config,
                        budget=budget,
                        options=options,
                        run_root=run.directory,
                        **common,
                    )
            finally:
                found = _search_run(store, run, problem.name)
                if found is not None:
                    store.add_event(
                        run.id, f"task/{problem.name}", "task-run", {"task": problem.name, "run": found.id}
                    )
    except BaseException:
        store.update_run(run.id, status="stopped", stop_reason="interrupted; --resume goes on")
        raise
    store.update_run(run.id, status="finished")
    summary = load_run(store, run.id).summary
    store.update_run(run.id, summary=summary.to_dict())
    return BenchResult(run.id, summary.counts, unmatched=[])
