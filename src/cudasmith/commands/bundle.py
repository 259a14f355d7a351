"""Flags that several commands share, taken as one dataclass: a command decorated with `bundled`
declares a parameter of the dataclass's type, and Typer sees the dataclass's fields (each an annotated
option or argument) in its place, where the command declares it."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

try:  # Typer 0.2x parses with its own copy of Click; older ones with Click itself
    from typer._click.core import ParameterSource
    from typer._click.globals import get_current_context
except ImportError:  # pragma: no cover
    from click.core import ParameterSource  # type: ignore[assignment]
    from click.globals import get_current_context  # type: ignore[no-redef]

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


def bundled(command: Callable[..., Any], parameter: str, flags_class: type) -> Callable[..., Any]:
    """`command`, taking the fields of `flags_class` as flags where it declares its `parameter`."""
    hints = typing.get_type_hints(flags_class, include_extras=True)
    flags = [
        inspect.Parameter(
            field.name, inspect.Parameter.KEYWORD_ONLY, default=field.default, annotation=hints[field.name]
        )
        for field in dataclasses.fields(flags_class)
    ]
    declared = inspect.signature(command, eval_str=True).parameters.values()
    own = [p for p in declared if p.name != parameter]
    clash = {p.name for p in own} & {p.name for p in flags}
    if clash:
        raise TypeError(
            f"{command.__name__} declares {flags_class.__name__} flags itself: {', '.join(sorted(clash))}"
        )

    @functools.wraps(command)
    def run(**values: Any) -> Any:
        bundle = flags_class(**{p.name: values.pop(p.name) for p in flags})
        return command(**values, **{parameter: bundle})

    # Typer passes every value by keyword, so all may be keyword-only wherever the flags stand.
    parameters = [
        new
        for p in declared
        for new in (flags if p.name == parameter else [p.replace(kind=inspect.Parameter.KEYWORD_ONLY)])
    ]
    # Typer reads both: the signature for the parameters, the annotations for their types.
    run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters}
    return run


def given(flags: DataclassInstance) -> list[str]:
    """The flags of a bundle the command line set, as typed (`--time-limit`): within a command, every one
    it names, a default spelt out included (`--rules strict` says strict, whatever another default is);
    outside one, those whose value is not their default."""
    context = get_current_context(silent=True)
    named = []
    for field in dataclasses.fields(flags):
        source = context.get_parameter_source(field.name) if context is not None else None
        if source is None:
            set_here = getattr(flags, field.name) != field.default
        else:
            set_here = source not in (ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)
        if set_here:
            named.append("--" + field.name.replace("_", "-"))
    return named
