"""Tamper detection inside the worker: what the candidate must not replace, and threads it must not leave.

The worker takes a snapshot before any candidate code is imported: the identity of every function
and class the harness relies on (its own modules, the comparison and timing functions of torch and
time). Afterwards it checks that each name still refers to the same object. The harness itself calls
the objects it captured, so a replacement changes nothing it measures; the check makes the attempt
visible as a verdict.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

# (module, attribute path) pairs a candidate might patch to fool a judge: comparisons and timers.
WATCHED = (
    ("torch", "allclose"),
    ("torch", "isclose"),
    ("torch", "equal"),
    ("torch", "eq"),
    ("torch.Tensor", "__eq__"),
    ("torch.Tensor", "__ne__"),
    ("torch.Tensor", "data_ptr"),
    ("torch.testing", "assert_close"),
    ("torch.cuda", "synchronize"),
    ("torch.cuda", "Event"),
    ("torch.cuda.Event", "record"),
    ("torch.cuda.Event", "elapsed_time"),
    ("torch.cuda.Event", "synchronize"),
    ("torch.cuda", "current_stream"),
    ("time", "perf_counter"),
    ("time", "perf_counter_ns"),
    ("time", "monotonic"),
    ("time", "time"),
    ("json", "dumps"),
    ("builtins", "type"),
    ("builtins", "isinstance"),
)
# Functions of packages that may be imported only after the candidate (Triton is imported by Triton
# solutions); they are checked by where their code lives rather than by identity.
WATCHED_BY_ORIGIN = (("triton.testing", "do_bench", "triton"),)
HARNESS_PACKAGES = (
    "cudasmith.harness",
    "cudasmith.timing",
    "cudasmith.device",
    "cudasmith.tasks",
    "cudasmith.runtime",
)


def _resolve(dotted: str, attribute: str) -> Any:
    """`torch.cuda.Event` + `record`: import the longest importable prefix, then walk attributes."""
    try:
        owner = importlib.import_module(dotted)
    except ImportError:
        module, _, name = dotted.rpartition(".")
        owner = getattr(importlib.import_module(module), name)
    return getattr(owner, attribute)


def _harness_members() -> dict[str, Any]:
    members: dict[str, Any] = {}
    for name, module in list(sys.modules.items()):
        if not isinstance(module, ModuleType) or not name.startswith(HARNESS_PACKAGES):
            continue
        for attribute, value in list(vars(module).items()):
            if callable(value) and not attribute.startswith("__"):
                members[f"{name}.{attribute}"] = value
                if isinstance(value, type) and value.__module__ == name:
                    for method, function in list(vars(value).items()):
                        if callable(function):
                            members[f"{name}.{attribute}.{method}"] = function
    return members


class Snapshot:
    """Identities of watched objects and the threads alive, taken before candidate code runs."""

    def __init__(self) -> None:
        self.watched = {}
        for module, attribute in WATCHED:
            with contextlib.suppress(ImportError, AttributeError):
                self.watched[f"{module}.{attribute}"] = _resolve(module, attribute)
        self.harness = _harness_members()
        self.threads = {t.ident for t in threading.enumerate()}

    def tampered(self) -> list[str]:
        """Names now bound to other objects than at the snapshot."""
        changed = []
        for name, original in self.watched.items():
            module, attribute = name.rsplit(".", 1)
            try:
                if _resolve(module, attribute) is not original:
                    changed.append(name)
            except (AttributeError, ImportError):
                changed.append(name)
        current = _harness_members()
        changed += [name for name, value in self.harness.items() if current.get(name) is not value]
        for module, attribute, package in WATCHED_BY_ORIGIN:
            loaded = sys.modules.get(module)
            function = getattr(loaded, attribute, None) if loaded else None
            if loaded is not None and not _defined_in(function, package):
                changed.append(f"{module}.{attribute}")
        return changed

    def new_threads(self) -> list[str]:
        """Threads alive now that were not at the snapshot."""
        return [t.name for t in threading.enumerate() if t.ident not in self.threads and t.is_alive()]


def _defined_in(function: Any, package: str) -> bool:
    code = getattr(function, "__code__", None)
    root = sys.modules.get(package)
    if code is None or root is None or not getattr(root, "__file__", None):
        return False
    return Path(code.co_filename).resolve().is_relative_to(Path(root.__file__).resolve().parent)


def describe(names: list[str]) -> str:
    """One line naming what was replaced."""
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"the solution replaced {shown}"
