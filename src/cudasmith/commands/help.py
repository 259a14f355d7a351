"""How `cudasmith --help` reads: paragraphs that flow to the terminal's width, flags without a value."""

from __future__ import annotations

import inspect
from typing import Any

from typer.core import TyperArgument, TyperGroup


def flowing(docstring: str | None) -> str:
    """A docstring as help: its paragraphs kept, the line breaks inside each removed, so that the help
    wraps at the terminal's width instead of at the source's."""
    paragraphs = inspect.cleandoc(docstring or "").split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


def _no_type(ctx: Any) -> None:
    return None


def _plain(params: list[Any]) -> list[Any]:
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
        if isinstance(param, TyperArgument):
            param.display_type_rich = _no_type  # type: ignore[method-assign]  # this argument's only: Typer has no option for it
    return params


class CudasmithGroup(TyperGroup):
    """The command group. Typer's help lists a flag as taking a `<bool>` value and an argument named
    TASK as `TASK <str>`; here flags show no value and arguments their name alone, on every command."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _plain(super().get_params(ctx))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _plain(command.get_params(ctx))
        return command
