"""Tunable constants: a candidate declares module-level constants and the values worth trying,

    BLOCK = 256
    TUNABLE = {"BLOCK": [128, 256, 512, 1024]}

and the search judges variants with other values without another model call. Variants are made by
rewriting the constant's assignment in the source (found with `ast`, nothing is run); one constant
changes at a time, nearest values first, so a few trials cover every constant.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass

# The module-level name that declares the tunables.
TUNABLE_NAME = "TUNABLE"
Value = int | float | str


@dataclass(frozen=True)
class Tunable:
    """A constant, its value in the source, the values to try, and where its value is written."""

    name: str
    current: Value
    values: tuple[Value, ...]
    line: int
    col: int
    end_col: int


def _constant(node: ast.expr) -> Value | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)):
        return None if isinstance(node.value, bool) else node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _constant(node.operand)
        return -inner if isinstance(inner, (int, float)) else None
    return None


def declared_tunables(source: str) -> list[Tunable]:
    """The tunables a solution declares that the search can rewrite (others are ignored)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    assignments: dict[str, ast.Assign] = {}
    declared: dict[str, list[Value]] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if not isinstance(target, ast.Name):
            continue
        if target.id == TUNABLE_NAME and isinstance(node.value, ast.Dict):
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                name = _constant(key) if key is not None else None
                if isinstance(name, str) and isinstance(value, (ast.List, ast.Tuple)):
                    constants = [_constant(v) for v in value.elts]
                    declared[name] = [c for c in constants if c is not None]
        elif node.value.lineno == node.value.end_lineno:
            assignments[target.id] = node
    found = []
    for name, choices in declared.items():
        assignment = assignments.get(name)
        current = None if assignment is None else _constant(assignment.value)
        if assignment is None or current is None:
            continue
        values = tuple(dict.fromkeys(c for c in choices if type(c) is type(current)))
        found.append(
            Tunable(
                name,
                current,
                values,
                assignment.value.lineno,
                assignment.value.col_offset,
                assignment.value.end_col_offset or 0,
            )
        )
    return found


def with_value(source: str, tunable: Tunable, value: Value) -> str:
    """The source with one constant set to `value`."""
    lines = source.splitlines(keepends=True)
    line = lines[tunable.line - 1]
    lines[tunable.line - 1] = line[: tunable.col] + repr(value) + line[tunable.end_col :]
    return "".join(lines)


def _distance(tunable: Tunable, value: Value) -> float:
    """How far a value is from the current one: by position in the declared list."""
    order = list(tunable.values)
    if tunable.current in order:
        return abs(order.index(value) - order.index(tunable.current))
    return order.index(value)


def variants(source: str, trials: int) -> list[tuple[str, dict[str, Value]]]:
    """Up to `trials` variants of the source, each changing one constant, nearest values first and the
    constants taken in turn; with each, the values it set."""
    tunables = declared_tunables(source)
    per_constant = [
        sorted((v for v in t.values if v != t.current), key=functools.partial(_distance, t)) for t in tunables
    ]
    chosen: list[tuple[str, dict[str, Value]]] = []
    depth = 0
    while len(chosen) < trials and any(depth < len(values) for values in per_constant):
        for tunable, values in zip(tunables, per_constant, strict=True):
            if depth < len(values) and len(chosen) < trials:
                chosen.append((with_value(source, tunable, values[depth]), {tunable.name: values[depth]}))
        depth += 1
    return chosen
