"""`cudasmith.optimize`: search for a faster kernel with language models, on the run store.

settings = SearchSettings(OptimizeConfig(strategy="fsr", n=4, depth=5), EvalOptions(device="cuda"))
result = cudasmith.optimize("level1/softmax", ["openai:gpt-5-mini"], settings)
result.best_path, result.summary.best_speedup
cudasmith.optimize(resume=result.run_id)       # goes on after a crash, nothing asked or judged twice
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from cudasmith.device import usable_device
from cudasmith.errors import CudasmithError, UsageError
from cudasmith.harness.options import EvalOptions
from cudasmith.jsontypes import JsonDict
from cudasmith.llm import Budget, LLMClient, load_llm_config, make_client
from cudasmith.search.ask import load_problem_or_task
from cudasmith.search.config import OptimizeConfig, SearchSettings, load_optimize_config
from cudasmith.search.driver import drive
from cudasmith.search.ensemble import Ensemble
from cudasmith.search.hardware import describe_hardware
from cudasmith.search.judge import JudgeFactory, cache_key
from cudasmith.search.prompts import PromptBuilder
from cudasmith.search.state import Search, Snapshot
from cudasmith.search.strategies import STRATEGIES, SearchContext, best
from cudasmith.store import Run, RunStore
from cudasmith.store.runs import load_run
from cudasmith.store.start import new_run
from cudasmith.store.summary import RunSummary
from cudasmith.tasks.problem import Problem, load_problem


@dataclass
class OptimizeResult:
    """A finished (or stopped) run: its id, its store, the best kernel's file and the summary."""

    run_id: str
    store_path: Path
    best_path: Path | None
    summary: RunSummary

    @property
    def best_speedup(self) -> float | None:
        """The best correct kernel's geometric-mean speedup over eager PyTorch."""
        return self.summary.best_speedup

    def to_dict(self) -> JsonDict:
        """The summary, as `optimize --json` prints it."""
        return {**self.summary.to_dict(), "store": str(self.store_path)}


def _new_run(
    store: RunStore,
    problem: Problem,
    models: list[str],
    config: OptimizeConfig,
    options: EvalOptions,
    budget_usd: float | None,
    run_root: Path,
) -> Run:
    run = new_run(
        "optimize",
        problem.name,
        problem.source_hash,
        options.device,
        options.seed,
        problem_path=str(problem.path),
        strategy=config.strategy,
        models=models,
        options={
            "search": config.model_dump(mode="json"),
            "judge": options.stored(),
            "budget_usd": budget_usd,
        },
    )
    run.directory = str(run_root / run.id)
    return store.create_run(run)


def _resumed(store: RunStore, run_id: str) -> tuple[Run, Problem, OptimizeConfig, EvalOptions]:
    run = store.run(run_id)
    if run.kind != "optimize":
        raise UsageError(f"run {run_id} is a {run.kind} run, not an optimize run")
    problem = load_problem(run.problem_path or "", name=run.task)
    if problem.source_hash != run.task_version:
        raise UsageError(f"{run.problem_path} changed since run {run_id} began; start a new run")
    config = OptimizeConfig.model_validate(run.options["search"])
    return run, problem, config, EvalOptions.from_stored(run.options["judge"], run.secret_seed)


def optimize(
    problem: Problem | str | Path | None = None,
    models: str | Sequence[str] | None = None,
    settings: SearchSettings | None = None,
    *,
    store: str | Path | None = None,
    resume: str | None = None,
    output: str | Path | None = None,
    judge_factory: JudgeFactory | None = None,
    on_change: Callable[[Snapshot], None] | None = None,
) -> OptimizeResult:
    """Search for a faster kernel of `problem` (a task name, a problem file or a Problem) with `models`,
    or go on with run `resume` (its stored search settings and judge options win; the lanes, providers
    and a new budget are `settings`'); the best kernel is written to `output` (else the run's directory,
    made in `settings.run_root`, by default beside the store).

    Candidates are judged on `settings.lanes`: a judge session on each local GPU the lanes name (all
    visible by default), or sessions as Ray actors; their builds run ahead on CPUs. `judge_factory`
    replaces the judge session (tests); `on_change` hears of every step (the live view)."""
    settings = settings or SearchSettings()
    llm_config = settings.llm or load_llm_config()
    run_store = RunStore(store)
    if resume is not None:
        run, loaded, config, options = _resumed(run_store, resume)
        stored_budget = run.options.get("budget_usd")
        budget_usd = settings.budget_usd if settings.budget_usd is not None else stored_budget
        model_specs = list(run.models)
    else:
        if problem is None:
            raise UsageError("give a task (or a problem file) to optimize, or --resume RUN")
        loaded = load_problem_or_task(problem)
        model_specs = [models] if isinstance(models, str) else list(models or [llm_config.default_model()])
        config = settings.search or load_optimize_config()
        if config.strategy not in STRATEGIES:
            raise UsageError(f"unknown strategy {config.strategy!r}; known: {', '.join(STRATEGIES)}")
        options = settings.judge
        # Screen, then confirm (harness/confirm.py), unless every candidate is to be timed in full.
        options = replace(options, confirm_margin=None if config.confirm_all else config.confirm_margin)
        budget_usd = settings.budget_usd if settings.budget_usd is not None else llm_config.budget_usd
    options = replace(options, device=usable_device(options.device))
    if config.weights and len(config.weights) != len(model_specs):
        raise UsageError(f"{len(config.weights)} weights for {len(model_specs)} models")
    lanes = settings.lanes
    lanes.check(options.device)
    shared_budget = Budget(budget_usd)
    # Made first: a missing key or SDK fails before any run is stored.
    clients: dict[str, LLMClient] = {
        spec: make_client(spec, llm_config, budget=shared_budget)
        for spec in dict.fromkeys([*model_specs, *([config.verifier] if config.verifier else [])])
    }
    if resume is None:
        root = Path(settings.run_root) if settings.run_root is not None else run_store.path.parent
        run = _new_run(run_store, loaded, model_specs, config, options, budget_usd, root)
    options = replace(options, seed=run.secret_seed)
    context = SearchContext(
        problem=loaded,
        device=options.device,
        builder=PromptBuilder(settings.templates),
        hardware=describe_hardware(options.device),
        config=config,
        seed=run.secret_seed or 0,
    )
    run_dir = Path(run.directory or run_store.path.parent / run.id)
    try:
        executor = lanes.make(options.device, options.in_flight, judge_factory)
        with executor:
            context.lanes = executor.slots
            search = Search(
                store=run_store,
                run=run,
                strategy=STRATEGIES[config.strategy](context),
                context=context,
                clients=clients,
                budget=shared_budget,
                ensemble=Ensemble(model_specs, config.weights, config.cost_sensitivity),
                llm_config=llm_config,
                executor=executor,
                options=options,
                cache_key=cache_key(loaded, options, run.device_name),
                run_dir=run_dir,
                verifier=config.verifier,
                on_change=on_change,
            )
            outcome = asyncio.run(drive(search))
            lane_stats = executor.stats()
    except KeyboardInterrupt:
        run_store.update_run(run.id, status="stopped", stop_reason="interrupted")
        judged = sum(c.verdict is not None for c in context.candidates.values())
        print(f"stopped optimize {run.id}: {judged} candidates judged; resume with "
              f"`cudasmith optimize --resume {run.id}` (same --store)", file=sys.stderr)  # fmt: skip
        raise
    except CudasmithError as exc:
        run_store.update_run(run.id, status="failed", stop_reason=str(exc))
        raise
    top = best(list(context.candidates.values()))
    best_path = None
    if top is not None and top.source is not None:
        best_path = Path(output) if output is not None else run_dir / "best.py"
        best_path.parent.mkdir(parents=True, exist_ok=True)
        best_path.write_text(top.source)
    run_store.update_run(run.id, status="finished", stop_reason=outcome.stop_reason)
    # The store's summary, with what only this process knew (a resumed run's idle time adds up).
    summary = load_run(run_store, run.id).summary
    idle_s = round(summary.judge.idle_waiting_s + outcome.judge_idle_waiting_s, 3)
    summary = replace(
        summary,
        judge=replace(summary.judge, idle_waiting_s=idle_s),
        best_path=None if best_path is None else str(best_path),
        errors=outcome.errors,
        executor=lane_stats,
    )
    run_store.update_run(run.id, summary=summary.to_dict())
    return OptimizeResult(run.id, run_store.path, best_path, summary)
