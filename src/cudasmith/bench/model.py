"""A bench of a model over a set of tasks: per task, one search by the optimize driver (`one-shot`: one
request for n answers; `fsr` and `evolve`: their rounds, n candidates per round), all in the run store.

The bench run records each task's search run as an event (`task-run`), written even when the search is
interrupted; a search killed before that (kill -9) is found again by its task and start time. So a
resumed bench finishes the unfinished searches (`optimize(resume=…)`: no stored answer asked for
again, no stored verdict judged again) and starts the tasks not yet begun.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from cudasmith.bench.folder import BenchResult, scope
from cudasmith.errors import UsageError
from cudasmith.harness.options import EvalOptions
from cudasmith.llm import load_llm_config, make_client
from cudasmith.search.config import OptimizeConfig, SearchSettings
from cudasmith.search.optimize import optimize
from cudasmith.store import Run, RunStore, code_hash
from cudasmith.store.runs import load_run, task_runs
from cudasmith.store.start import new_run
from cudasmith.tasks.problem import Problem, load_problem
from cudasmith.timestamps import STORE_TIMESPEC, now_iso

MODEL_STRATEGIES = ("one-shot", "fsr", "evolve")
# Told before each task's search starts: (task, its index, tasks in all).
OnTask = Callable[[str, int, int], None]


def _new_run(store: RunStore, problems: list[Problem], models: list[str], settings: SearchSettings) -> Run:
    search, options = _search_of(settings), settings.judge
    run = new_run(
        "bench",
        scope([p.name for p in problems]),
        code_hash("\n".join(f"{p.name} {p.source_hash}" for p in problems)),
        options.device,
        options.seed,
        strategy=search.strategy,
        models=models,
        options={
            "tasks": [{"name": p.name, "path": str(p.path), "version": p.source_hash} for p in problems],
            "search": search.model_dump(mode="json"),
            "budget_usd": settings.budget_usd,
            "judge": options.stored(),
            # The seed the user fixed for every search (each draws its own otherwise).
            "judge_seed": options.seed,
        },
    )
    # Its searches' folders go inside its own, not beside the store (a level is dozens of searches).
    run.directory = str(store.path.parent / run.id)
    return store.create_run(run)


def _search_of(settings: SearchSettings) -> OptimizeConfig:
    """The search each task gets: the settings' (one-shot by default, one answer per task)."""
    return settings.search or OptimizeConfig(strategy="one-shot", n=1)


def _resumed(
    store: RunStore, run_id: str, settings: SearchSettings
) -> tuple[Run, list[Problem], SearchSettings]:
    """A stored bench of a model: its run, its tasks, and the settings it was started with (the lanes and
    the model providers are this process's)."""
    run = store.run(run_id)
    if run.kind != "bench" or run.strategy not in MODEL_STRATEGIES:
        raise UsageError(f"run {run_id} is not a bench of a model")
    problems = []
    for task in run.options["tasks"]:
        problem = load_problem(task["path"], name=task["name"])
        if problem.source_hash != task["version"]:
            raise UsageError(f"{task['path']} changed since bench {run_id} began; start a new bench")
        problems.append(problem)
    stored = replace(
        settings,
        search=OptimizeConfig.model_validate(run.options["search"]),
        judge=EvalOptions.from_stored(run.options["judge"], run.options.get("judge_seed")),
        budget_usd=run.options.get("budget_usd"),
    )
    return run, problems, stored


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
    models: Sequence[str] = (),
    settings: SearchSettings | None = None,
    resume: str | None = None,
    on_task: OnTask | None = None,
) -> BenchResult:
    """Run `models` over `problems`, one search per task (`settings.search`: one-shot with one answer by
    default; `settings.budget_usd` over all tasks), into a new bench run of `store`, or go on with the
    bench run `resume`; each search judges on `settings.lanes` (default: a session on each visible GPU)."""
    settings = settings or SearchSettings()
    if resume is not None:
        run, problems, settings = _resumed(store, resume, settings)
        models = run.models
    elif not problems or not models:
        raise UsageError("give the tasks and the model to bench, or --resume RUN")
    settings.lanes.check(settings.judge.device)
    # Every model's client is made first: a missing key or SDK fails in one line before any task starts.
    llm_config = settings.llm or load_llm_config()
    for model in models:
        make_client(model, llm_config)
    if resume is None:
        run = _new_run(store, problems, list(models), settings)
    search = _search_of(settings)
    total_usd = settings.budget_usd
    try:
        for index, problem in enumerate(problems):
            found = _search_run(store, run, problem.name)
            if found is not None and found.status == "finished":
                continue
            if on_task:
                on_task(problem.name, index, len(problems))
            left = None if total_usd is None else max(0.0, total_usd - _spent(store, run))
            task = replace(settings, search=search, llm=llm_config, budget_usd=left, run_root=run.directory)
            if found is None:
                store.add_event(
                    run.id,
                    f"start/{problem.name}",
                    "task-start",
                    {"task": problem.name, "started_at": now_iso(STORE_TIMESPEC)},
                )
            try:
                if found is not None:
                    optimize(settings=task, store=store.path, resume=found.id)
                else:
                    optimize(problem, list(models), task, store=store.path)
            finally:
                if (searched := _search_run(store, run, problem.name)) is not None:
                    data = {"task": problem.name, "run": searched.id}
                    store.add_event(run.id, f"task/{problem.name}", "task-run", data)
    except BaseException:
        store.update_run(run.id, status="stopped", stop_reason="interrupted; --resume goes on")
        raise
    store.update_run(run.id, status="finished")
    summary = load_run(store, run.id).summary
    store.update_run(run.id, summary=summary.to_dict())
    return BenchResult(run.id, summary.counts, unmatched=[])
