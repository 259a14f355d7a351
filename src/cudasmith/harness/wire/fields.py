"""Typed messages as JSON headers: a dataclass written field by field, and read back with every field's
type checked against its annotation.

The parent reads replies from processes that run candidate code, so reading is strict: a field missing
(without a default) or of another type than its annotation says is a MalformedMessage, never a value
taken on trust. Supported annotations: bool, int, float (an int is taken as a float), str, Any, None
unions (`X | None`), list[X], tuple[X, ...], dict[str, X], Literal strings, and dataclasses (read
recursively, their own checks included).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import cache
from typing import Any, TypeVar, Union

from cudasmith.jsontypes import JsonObject

T = TypeVar("T")


def known_fields(cls: type, data: JsonObject) -> JsonObject:
    """The entries of `data` that name a field of the dataclass `cls`: what a tolerant reader keeps of
    JSON another version wrote (a key it does not know is dropped; a field missing takes its default)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {name: value for name, value in data.items() if name in names}


class MalformedMessage(Exception):
    """A message whose fields are not what its type says."""


def to_wire(message: Any) -> Any:
    """A dataclass (and what it holds) as JSON-ready values."""
    if dataclasses.is_dataclass(message) and not isinstance(message, type):
        return {f.name: to_wire(getattr(message, f.name)) for f in dataclasses.fields(message)}
    if isinstance(message, (list, tuple)):
        return [to_wire(item) for item in message]
    if isinstance(message, dict):
        return {str(key): to_wire(value) for key, value in message.items()}
    return message


@cache
def _hints(cls: type) -> dict[str, object]:
    return typing.get_type_hints(cls)


def from_wire(cls: type[T], data: Any, where: str = "") -> T:
    """An instance of dataclass `cls` from JSON values, every field checked; MalformedMessage otherwise."""
    return _read(cls, data, where or cls.__name__)


def _read(kind: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(kind)
    if kind is Any:
        return value
    if origin in (Union, types.UnionType):
        options = typing.get_args(kind)
        if value is None and type(None) in options:
            return None
        for option in (o for o in options if o is not type(None)):
            try:
                return _read(option, value, where)
            except MalformedMessage:
                continue
        raise MalformedMessage(f"{where}: {type(value).__name__} is none of {kind}")
    if origin is typing.Literal:
        if value not in typing.get_args(kind):
            raise MalformedMessage(f"{where}: {value!r} is not one of {typing.get_args(kind)}")
        return value
    if origin in (list, tuple):
        if not isinstance(value, list):
            raise MalformedMessage(f"{where}: a list was expected, not {type(value).__name__}")
        item = typing.get_args(kind)[0]
        items = [_read(item, entry, f"{where}[{i}]") for i, entry in enumerate(value)]
        return items if origin is list else tuple(items)
    if origin is dict:
        if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
            raise MalformedMessage(f"{where}: an object was expected, not {type(value).__name__}")
        item = typing.get_args(kind)[1]
        return {key: _read(item, entry, f"{where}.{key}") for key, entry in value.items()}
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return _read_dataclass(kind, value, where)
    return _read_plain(kind, value, where)


def _read_plain(kind: Any, value: Any, where: str) -> Any:
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind is int and isinstance(value, bool):
        raise MalformedMessage(f"{where}: a number was expected, not a boolean")
    if kind in (bool, int, float, str) and isinstance(value, kind):
        return value
    raise MalformedMessage(f"{where}: {getattr(kind, '__name__', kind)} expected, not {type(value).__name__}")


def _read_dataclass(cls: type, value: Any, where: str) -> Any:
    if not isinstance(value, dict):
        raise MalformedMessage(f"{where}: an object was expected, not {type(value).__name__}")
    hints, found = _hints(cls), {}
    for item in dataclasses.fields(cls):
        if not item.init:
            continue
        if item.name in value:
            found[item.name] = _read(hints[item.name], value[item.name], f"{where}.{item.name}")
        elif item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING:
            raise MalformedMessage(f"{where}: no {item.name!r}")
    try:
        return cls(**found)
    except (TypeError, ValueError) as exc:  # a dataclass's own checks (TimingPlan's states, say)
        raise MalformedMessage(f"{where}: {exc}") from None
