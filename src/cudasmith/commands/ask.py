"""`cudasmith ask`: one request to a model, every answer judged."""

from __future__ import annotations

import json
import sys

import typer

from cudasmith.commands.common import EXIT_CORRECT, EXIT_VERDICT
from cudasmith.commands.judging import JudgeFlags, judging
from cudasmith.commands.options import (
    BudgetOption,
    CountOption,
    JsonOption,
    ModelOption,
    StoreOption,
    TaskFlags,
    at_least_one,
    for_a_task,
)
from cudasmith.commands.prompt import PromptFlags, prompting
from cudasmith.commands.store import store_to_write


@judging
@for_a_task
@prompting
def ask_command(
    *,
    task_flags: TaskFlags,
    model: ModelOption = None,
    n: CountOption = None,
    budget: BudgetOption = None,
    as_json: JsonOption = False,
    store: StoreOption = None,
    prompt_flags: PromptFlags,
    judge: JudgeFlags,
) -> None:
    """Ask a model for solutions of TASK once, judge every answer, and print the verdicts.

    Everything is kept in a run folder beside the run store (runs/ask-…): the prompt, each answer,
    each candidate file and verdict. Exit code 0 when a candidate is correct, 1 when none is, 2 for bad
    usage or when the model gave no answer. Keys come from the environment (OPENAI_API_KEY, …).

    Example: [bold]cudasmith ask level1/softmax --model openai:gpt-5-mini -n 4 --device cpu[/]
    """
    from cudasmith.llm import check_model
    from cudasmith.llm.config import load_llm_config

    # Usage errors first, with nothing of torch imported: they come at once.
    task_flags.check()
    judge.check()
    at_least_one(n=n)
    settings = load_llm_config(prompt_flags.config, budget_usd=budget)
    check_model(model or settings.default_model(), settings)

    from cudasmith.report.progress import judge_progress
    from cudasmith.search.ask import ask

    loaded = task_flags.load()
    options = judge.options()
    with store_to_write(store) as where, judge_progress(bar=not as_json) as progress:
        result = ask(
            loaded,
            model,
            1 if n is None else n,
            options.device,
            settings,
            options,
            where,
            prompt_flags.template_folder(),
            prompt_flags.parent_solution(),
            progress=progress,
        )
    if as_json:
        sys.stdout.write(json.dumps(result.to_dict(), indent=2) + "\n")
    else:
        from cudasmith.report.ask_table import print_ask

        print_ask(result)
    raise typer.Exit(EXIT_CORRECT if result.best is not None else EXIT_VERDICT)
