"""`cudasmith optimize`: the search loop (FSR or evolutionary) on the run store."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from cudasmith.commands.common import EXIT_CORRECT, EXIT_VERDICT, stderr
from cudasmith.commands.judging import JudgeFlags, judging
from cudasmith.commands.options import (
    MODELS,
    BudgetOption,
    ConfigOption,
    CountOption,
    DepthOption,
    JsonOption,
    LaneFlags,
    ModelsOption,
    OutputOption,
    ResumeOption,
    StoreOption,
    StrategyOption,
    TaskFlags,
    TemplatesOption,
    at_least_one,
    for_a_task,
    in_lanes,
    value_option,
)
from cudasmith.commands.store import existing_store, store_to_write
from cudasmith.errors import UsageError


def _weights(text: str | None) -> tuple[float, ...] | None:
    try:
        return tuple(float(w) for w in text.split(",")) if text else None
    except ValueError:
        raise UsageError(f"--weights must be numbers separated by commas, not {text!r}") from None


@judging
@in_lanes
@for_a_task
def optimize_command(
    task_flags: TaskFlags,
    model: ModelsOption = None,
    weights: Annotated[
        str | None,
        value_option(
            metavar="W,W…",
            help="Weights of the models, comma-separated, e.g. 3,1 \\[default: equal]",
            panel=MODELS,
        ),
    ] = None,
    strategy: StrategyOption = None,
    n: CountOption = None,
    depth: DepthOption = None,
    budget: BudgetOption = None,
    verifier: Annotated[
        str | None,
        value_option(
            metavar="MODEL",
            help="A model that reviews candidates first (it only reorders the judge's queue).",
            panel=MODELS,
        ),
    ] = None,
    store: StoreOption = None,
    resume: ResumeOption = None,
    output: OutputOption = None,
    as_json: JsonOption = False,
    config: ConfigOption = None,
    templates: TemplatesOption = None,
    confirm_all: Annotated[
        bool,
        typer.Option(
            "--confirm-all",
            help="Time every correct candidate by the full protocol. By default a short screen comes first "
            "and only candidates that could be the best (within a margin of the run's best or of eager "
            "PyTorch) are confirmed; the others keep a screened speedup, never reported as a time.",
        ),
    ] = False,
    *,
    lane_flags: LaneFlags,
    judge: JudgeFlags,
) -> None:
    """Search for a faster kernel of TASK with language models: N candidates per round, D rounds, each
    judged (compile, correctness, timing) and the best seeding the next round (fsr), or islands of
    kernels that evolve (evolve). Everything goes into the run store; --resume RUN goes on after a
    crash or Ctrl-C without asking or judging anything twice. -o writes the best kernel (else the run's
    folder holds it as best.py).

    Every visible GPU judges (one session each, --gpus to choose), while CPUs compile candidates ahead;
    --executor ray spreads the sessions over a Ray cluster.

    Exit code 0 when a correct kernel was found, 1 when none was, 2 for bad usage.

    Example: [bold]cudasmith optimize level1/softmax -m openai:gpt-5-mini -n 4 --depth 5 -o best.py[/]
    """
    from cudasmith.llm import check_model
    from cudasmith.llm.config import load_llm_config
    from cudasmith.search.config import SearchSettings, load_optimize_config

    # Usage errors first, with nothing of torch imported: they come at once.
    at_least_one(n=n, depth=depth)
    task_name = ""
    if resume is not None:
        judge.refuse_with_resume(["TASK"] if task_flags.given() else [], "task")
        with existing_store(store) as opened:
            task_name = opened.run(resume).task  # the panel's label, as when the run began
    else:
        task_flags.check()
        judge.check()
    search = load_optimize_config(
        config,
        strategy=strategy,
        n=n,
        depth=depth,
        verifier=verifier,
        weights=_weights(weights),
        confirm_all=confirm_all or None,
    )
    llm_config = load_llm_config(config)
    named = model or ([] if resume is not None else [llm_config.default_model()])
    for spec in [*named, *([search.verifier] if search.verifier else [])]:
        check_model(spec, llm_config)

    from cudasmith.harness.options import EvalOptions
    from cudasmith.report.optimize_view import live_view, print_summary
    from cudasmith.search.optimize import optimize
    from cudasmith.search.prompts import templates_from_config

    loaded = None if resume is not None else task_flags.load()
    options = None if resume is not None else judge.options()
    settings = SearchSettings(
        search=search,
        judge=options or EvalOptions(),  # a resumed run's own options win
        lanes=lane_flags.lanes(),
        llm=llm_config,
        budget_usd=budget,
        templates=templates or templates_from_config(config),
    )
    title = f"optimize {loaded.name if loaded is not None else task_name}"
    with (
        store_to_write(store) as where,
        live_view(title, terminal=not as_json and stderr.is_terminal) as on_change,
    ):
        result = optimize(
            loaded, model, settings, store=where, resume=resume, output=output, on_change=on_change
        )
    if as_json:
        sys.stdout.write(json.dumps(result.to_dict(), indent=2) + "\n")
    else:
        print_summary(result.summary)
    raise typer.Exit(EXIT_CORRECT if result.summary.best is not None else EXIT_VERDICT)
