"""`cudasmith tasks` and `cudasmith show`: what the tasks are, and one task in detail."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from cudasmith.commands.common import command_device
from cudasmith.commands.options import (
    DeviceOption,
    FromOption,
    JsonOption,
    LevelOption,
    TaskFlags,
    for_a_task,
)
from cudasmith.errors import UsageError

if TYPE_CHECKING:
    from cudasmith.tasks.directory import ProblemDirectory


def _unloaded(listing: ProblemDirectory) -> list[dict[str, str]]:
    return [
        {"status": status, "name": entry.name, "path": str(entry.path), "reason": entry.reason}
        for status, entries in (("skipped", listing.skipped), ("failed", listing.failed))
        for entry in entries
    ]


def tasks_command(
    level: LevelOption = None, from_dir: FromOption = None, as_json: JsonOption = False
) -> None:
    """List tasks: name, dtype, public and hidden configs, baselines, and what each computes.

    With --from, the problems of a directory instead: a KernelBench checkout or a folder of problem files.

    Example: [bold]cudasmith tasks --level apps[/] · [bold]cudasmith tasks --from KernelBench --level level1[/]
    """
    from cudasmith.tasks.catalog import TaskListing, in_level, level_counts, level_of, task_row
    from cudasmith.tasks.problem import list_task_names, load_task

    unloaded: list[dict[str, str]] = []
    if from_dir is None:
        problems = [load_task(name) for name in list_task_names()]
    else:
        from cudasmith.tasks.directory import load_problem_dir

        listing = load_problem_dir(from_dir)
        problems, unloaded = listing.problems, _unloaded(listing)
    if level is not None:
        names = [p.name for p in problems] + [u["name"] for u in unloaded]
        if not any(in_level(name, level) for name in names):
            known = ", ".join(sorted({level_of(name) for name in names}))
            raise UsageError(f"unknown level {level!r}; the levels here are {known}")
        problems = [p for p in problems if in_level(p.name, level)]
        unloaded = [u for u in unloaded if in_level(u["name"], level)]
    rows, counts = [task_row(p) for p in problems], level_counts(problems)
    if as_json:
        document = TaskListing(counts=counts, total=len(rows), tasks=rows)
        if from_dir is not None:
            document["unloaded"] = unloaded
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return
    from cudasmith.report.task_tables import print_task_list

    print_task_list(rows, counts, unloaded)


@for_a_task
def show_command(
    task_flags: TaskFlags,
    device: DeviceOption = None,
    as_json: JsonOption = False,
    source: Annotated[bool, typer.Option("--source/--no-source", help="Print the reference source.")] = True,
) -> None:
    """Show a task: its reference, tolerance, baselines, sizes, work and roofline per config.

    Per config: sizes of inputs, weights and outputs, FLOPs, bytes moved, arithmetic intensity, and the
    speed of light and floor at the measured peaks of the device (without a GPU, the CPU's).

    Example: [bold]cudasmith show level3/gpt_forward --no-source[/]
    """
    task_flags.check()  # usage errors first, with nothing of torch imported: they come at once
    device = command_device(device, judging=False)

    from cudasmith.device import load_peaks
    from cudasmith.harness.task_details import task_details

    details = task_details(task_flags.load(), load_peaks(device))
    if as_json:
        sys.stdout.write(json.dumps(details, indent=2) + "\n")
        return
    from cudasmith.report.task_tables import print_task_details

    print_task_details(details, source=source)
