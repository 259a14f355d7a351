"""`cudasmith optimize`: the search loop (FSR or evolutionary) on the run store."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from cudasmith.cli_common import (
    AddressOption,
    BuildWorkersOption,
    ExecutorOption,
    GpusOption,
    InFlightOption,
    MemoryLimitOption,
    memory_limit,
)
from cudasmith.errors import UsageError

ModelOption = Annotated[
    list[str] | None,
    typer.Option(
        "--model",
        "-m",
        help="A model, PROVIDER:NAME (repeat for an ensemble) \\[default: llm.model of the config]",
    ),
]


def optimize_command(
    task: Annotated[
        str | None,
        typer.Argument(help="Built-in task (e.g. level1/softmax) or a problem file.", show_default=False),
    ] = None,
    problem: Annotated[Path | None, typer.Option("--problem", "-p", help="Problem file.")] = None,
    model: ModelOption = None,
    weights: Annotated[
        str | None, typer.Option(help="Weights of the models, comma-separated, e.g. 3,1 \\[default: equal]")
    ] = None,
    strategy: Annotated[
        str | None, typer.Option(help="fsr (rounds seeded by the best) or evolve (islands) \\[default: fsr]")
    ] = None,
    n: Annotated[int | None, typer.Option("-n", "--n", help="Candidates per round \\[default: 4]")] = None,
    depth: Annotated[int | None, typer.Option("-d", "--depth", help="Rounds \\[default: 5]")] = None,
    budget: Annotated[float | None, typer.Option(help="Make no new model call after this many US$.")] = None,
    verifier: Annotated[
        str | None,
        typer.Option(help="A model that reviews candidates first (it only reorders the judge's queue)."),
    ] = None,
    device: Annotated[
        str | None, typer.Option("--device", help="cuda or cpu \\[default: cuda when a GPU is visible]")
    ] = None,
    store: Annotated[
        Path | None, typer.Option(help="The run store \\[default: $CUDASMITH_STORE, else runs/cudasmith.db]")
    ] = None,
    resume: Annotated[str | None, typer.Option(help="Go on with a stopped or crashed run (its id).")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the best kernel here.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON summary object on stdout.")] = False,
    seeds: Annotated[int, typer.Option(help="Input sets checked per config.")] = 3,
    timing: Annotated[bool, typer.Option("--timing/--no-timing", help="Time correct candidates.")] = True,
    seed: Annotated[int | None, typer.Option(help="Fix the judge's secret seed.")] = None,
    config: Annotated[
        Path | None, typer.Option(help="Settings file \\[default: $CUDASMITH_CONFIG, else ./cudasmith.toml]")
    ] = None,
    templates: Annotated[Path | None, typer.Option(help="Directory of prompt templates.")] = None,
    executor: ExecutorOption = "local",
    gpus: GpusOption = None,
    address: AddressOption = None,
    build_workers: BuildWorkersOption = None,
    memory_limit_gib: MemoryLimitOption = None,
    in_flight: InFlightOption = None,
) -> None:
    """Search for a faster kernel of TASK with language models: N candidates per round, D rounds, each
    judged (compile, correctness, timing) and the best seeding the next round (fsr), or islands of
    kernels that evolve (evolve). Everything goes into the run store; --resume RUN goes on after a crash
    without asking or judging anything twice.

    Every visible GPU judges (one session each, --gpus to choose), while CPUs compile candidates ahead;
    --executor ray spreads the sessions over a Ray cluster.

    Exit code 0 when a correct kernel was found, 1 when none was, 2 for bad usage.

    Example: [bold]cudasmith optimize level1/softmax -m openai:gpt-5-mini -n 4 -d 5 -o best.py[/]
    """
    from cudasmith.cli import EXIT_CORRECT, EXIT_VERDICT, one_line_errors, stderr

    with one_line_errors():
        from cudasmith.harness.options import EvalOptions
        from cudasmith.llm.config import load_llm_config
        from cudasmith.report.optimize_view import live_view
        from cudasmith.search.config import load_optimize_config
        from cudasmith.search.optimize import optimize
        from cudasmith.search.prompts import templates_from_config

        if task is not None and problem is not None:
            raise UsageError("give a task or --problem, not both")
        if seeds < 1:
            raise UsageError("--seeds must be at least 1")
        try:
            weight_values = tuple(float(w) for w in weights.split(",")) if weights else None
        except ValueError:
            raise UsageError(f"--weights must be numbers separated by commas, not {weights!r}") from None
        settings = load_optimize_config(
            config, strategy=strategy, n=n, depth=depth, verifier=verifier, weights=weight_values
        )
        target = problem if problem is not None else task
        title = f"optimize {resume or target}"
        with live_view(title, enabled=not as_json and stderr.is_terminal) as on_change:
            result = optimize(
                target,
                model,
                budget=budget,
                device=device,
                store=store,
                resume=resume,
                output=output,
                config=settings,
                llm_config=load_llm_config(config),
                options=EvalOptions(
                    seed=seed,
                    seeds_per_config=seeds,
                    timing=timing,
                    in_flight=in_flight,
                    **memory_limit(memory_limit_gib),
                ),
                templates=templates or templates_from_config(config),
                executor=executor,
                gpus=gpus,
                address=address,
                build_workers=build_workers,
                on_change=on_change,
            )
    if as_json:
        sys.stdout.write(json.dumps(result.to_dict(), indent=2) + "\n")
    else:
        from cudasmith.report.optimize_view import print_summary

        print_summary(result.summary)
    raise typer.Exit(EXIT_CORRECT if result.summary["best"] is not None else EXIT_VERDICT)
