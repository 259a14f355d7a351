"""How `cudasmith --help` reads: paragraphs that flow to the terminal's width, flags without a value;
and how the command line's own usage errors read: one line, as every other error."""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Sequence
from typing import Any

from typer import Abort
from typer.core import TyperArgument, TyperGroup

from cudasmith.commands.common import say_error

try:  # Typer 0.2x parses with its own copy of Click; older ones with Click itself
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover
    from click.exceptions import ClickException  # type: ignore[assignment]


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


def click_error(error: ClickException) -> str:
    """A usage error Click found (a missing argument, a bad value, an unknown option or command) in the
    words of every other error: one sentence in lower case, no full stop, and where to read the usage."""
    sentences = re.split(r"(?<=[.:]) (?=[A-Z][a-z])", error.format_message().strip().rstrip("."))
    message = " ".join(part[:1].lower() + part[1:] for part in sentences).replace(". ", "; ")
    context = getattr(error, "ctx", None)
    return f"{message} ({context.command_path} --help)" if context is not None else message


class CudasmithGroup(TyperGroup):
    """The command group. Typer's help lists a flag as taking a `<bool>` value and an argument named
    TASK as `TASK <str>`; here flags show no value and arguments their name alone, on every command.
    Its usage errors are one line (`error: …`, exit code 2), never Typer's framed box."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        given = (args, prog_name, complete_var, False, windows_expand_args)
        if not standalone_mode:
            return super().main(*given, **extra)
        try:
            result = super().main(*given, **extra)
        except ClickException as error:
            # `cudasmith` alone has printed its help already (no_args_is_help); it says nothing more.
            if type(error).__name__ != "NoArgsIsHelpError":
                say_error(click_error(error))
            sys.exit(error.exit_code)
        except Abort:
            say_error("aborted")
            sys.exit(1)
        # A command that returns (rather than raising typer.Exit) succeeded; Exit's code comes back here.
        sys.exit(result if isinstance(result, int) else 0)

    def get_params(self, ctx: Any) -> list[Any]:
        return _plain(super().get_params(ctx))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _plain(command.get_params(ctx))
        return command
