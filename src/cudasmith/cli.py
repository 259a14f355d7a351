"""The `cudasmith` command: the Typer app and its commands, whose bodies live in cudasmith.commands
(heavy imports happen inside them, so `--help` stays quick)."""

from __future__ import annotations

from collections.abc import Callable

import typer

from cudasmith.commands.ask import ask_command
from cudasmith.commands.bench import bench_command
from cudasmith.commands.cache import cache_command
from cudasmith.commands.common import guarded
from cudasmith.commands.device import device_command
from cudasmith.commands.eval import eval_command
from cudasmith.commands.export import export_command
from cudasmith.commands.help import CudasmithGroup, flowing
from cudasmith.commands.optimize import optimize_command
from cudasmith.commands.options import VersionOption
from cudasmith.commands.prompt import prompt_command
from cudasmith.commands.report import report_command
from cudasmith.commands.serve import serve_command
from cudasmith.commands.tasks import show_command, tasks_command

SUMMARY = "Turn a PyTorch reference into a faster, verified GPU kernel, and judge kernels honestly."

app = typer.Typer(
    name="cudasmith",
    help=SUMMARY,
    cls=CudasmithGroup,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)

# In the order `cudasmith --help` lists them: judge, ask and search, benchmark, then the helpers.
COMMANDS: dict[str, Callable[..., None]] = {
    "eval": eval_command,
    "tasks": tasks_command,
    "show": show_command,
    "prompt": prompt_command,
    "ask": ask_command,
    "optimize": optimize_command,
    "bench": bench_command,
    "report": report_command,
    "export": export_command,
    "serve": serve_command,
    "device": device_command,
    "cache": cache_command,
}


@app.callback(help=SUMMARY)
def root(version: VersionOption = False) -> None:
    """The options before any command."""


for _name, _body in COMMANDS.items():
    app.command(_name, help=flowing(_body.__doc__))(guarded(_body))


def main() -> None:
    """Entry point of the `cudasmith` script."""
    app()
