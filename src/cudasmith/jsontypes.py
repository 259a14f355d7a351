"""JSON as types, for the places where data crosses into or out of JSON (a pipe, the run store, a file,
an API's body).

- `JsonDict` is JSON we write: a `to_dict` returns one, and every value in it is JSON.
- `JsonObject` is JSON we read, as json.loads gives it: its reader checks each field it takes (typed
  messages: harness/wire/fields.py; verdicts: Verdict.from_dict; the store's columns: store/shapes.py).
Data with a known shape inside the program is a dataclass or a TypedDict, never one of these.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

# Lists and objects as read-only views (covariant): a list[str] or a dict[str, float] is JSON as it is.
JsonValue: TypeAlias = "bool | int | float | str | Sequence[JsonValue] | Mapping[str, JsonValue] | None"
JsonDict: TypeAlias = dict[str, JsonValue]
JsonObject: TypeAlias = dict[str, Any]
