"""Tamper detection inside the worker: what the candidate must not replace, and what it must not leave behind.

The worker takes a snapshot before any candidate code is imported: the namespaces the judge relies on (its
own modules and classes; the modules and classes it calls between a candidate's call and the export of its
outputs: torch, tensors' methods, the profiler and the readers of its records, timers, files), the threads
alive and the signal handlers. After every call of the candidate (timed calls included), before anything
else, it checks that each name still refers to the same object: a replacement installed for a while is
caught while it is in place, and none is ever called by the judge afterwards. Most checks find every
namespace identical, key by key and value by value, to the state the last full comparison accepted
(Accepted, a few passes in C); only a difference costs the full comparison, which names it.

A check never runs candidate code. It holds the namespaces' own dicts (so a module whose class was swapped
cannot intercept a lookup), reads types with `type()`, compares by identity, and looks names up only in
dicts whose keys are all plain strings (a key of another type could compare equal to a name and run its
`__eq__`). Threads are known by their idents: the judge's own reference to threading's registry, and the
interpreter's list of threads running Python (a raw `_thread` thread is in the second only).

Nor can candidate code redirect the check. Its methods are pinned on the objects that run it (pin_methods):
replacing a function on the class (`Snapshot.tampered`, the worker's `check`) changes nothing the judge
calls. What the comparison calls (`type`, `map`, `operator.is_`…) was bound when this module was imported,
as default values: a module's name replaced (`operator.is_`, a builtin) is not what the check calls, and
it is reported like any other. A function's code or default values are not the candidate's to change
(audit.py refuses it).
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import operator
import signal
import sys
import threading
from pathlib import Path
from types import FunctionType, ModuleType
from typing import Any

import torch

# Modules whose callables are watched, besides the judge's own: comparisons, copies and timers, the
# profiler and its switches, files and shared memory: what the judge calls between a call and the export.
WATCHED_MODULES = (
    "builtins", "torch", "torch.cuda", "torch.testing", "torch._C", "torch._C._autograd", "torch._C._profiler",
    "torch.autograd.profiler", "time", "os", "json", "mmap", "math", "pathlib", "contextlib", "signal",
    "operator", "itertools", "ctypes",
)  # fmt: skip
# What the judge's own kernel launches go through (the blocker, the L2 flush, the close of a sample, the
# return marker: cudasmith.runtime, then NVIDIA's bindings), watched where a worker has loaded them.
WATCHED_IF_LOADED = ("cuda", "cuda.bindings", "cuda.bindings.driver", "cuda.bindings.nvrtc")
# Classes watched whole, with their bases (no entry replaced, none added: a new entry would shadow a base's):
# the methods the judge calls on tensors, the profiler's and its records' readers, paths, no_grad.
WATCHED_CLASSES = (
    ("torch", "Tensor"), ("torch.cuda", "Event"), ("torch.autograd.profiler", "profile"),
    ("torch._C._autograd", "_KinetoEvent"), ("torch._C._autograd", "_ProfilerResult"),
    ("torch._C._profiler", "ProfilerConfig"), ("torch._C._profiler", "_ExperimentalConfig"),
    ("pathlib", "PosixPath"), ("torch", "no_grad"),
)  # fmt: skip
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
_MISSING = object()


def _only_names(
    namespace: Any,
    _all: Any = all,
    _map: Any = map,
    _type: Any = type,
    _is: Any = operator.is_,
    _repeat: Any = itertools.repeat,
    _str: type = str,
) -> bool:
    """Whether every key is a plain str (then a lookup by name compares strings only). The keys' types are
    compared with str by identity: gathering them in a set would hash each type, and a type's metaclass
    may define `__hash__` and `__eq__`, the solution's code run inside the check."""
    return _all(_map(_is, _map(_type, namespace), _repeat(_str)))


def pin_methods(instance: Any) -> None:
    """Give `instance` its class's functions as its own bound methods: a call through the instance then runs
    what the class held now, whatever candidate code later puts on the class. The judge's objects that
    check, and the worker's own, are pinned before the solution is imported."""
    own = vars(instance)
    for cls in type(instance).__mro__[:-1]:
        for name, value in list(vars(cls).items()):
            if type(value) is FunctionType and not name.startswith("__") and name not in own:
                own[name] = value.__get__(instance)


def _harness_modules() -> list[tuple[str, ModuleType]]:
    found = []
    for name, module in list(sys.modules.items()):
        spec = getattr(module, "__spec__", None)
        real_name = spec.name if name == "__main__" and spec is not None else name  # the worker's own module
        if isinstance(module, ModuleType) and real_name.startswith(HARNESS_PACKAGES):
            found.append((name, module))
    return found


_TORCH_DIR = str(Path(torch.__file__).parent) + "/"


def _rewrapped_by_torch(
    new: Any,
    old: Any,
    _type: Any = type,
    _only: Any = _only_names,
    _function: Any = FunctionType,
    _str: Any = str,
    _torch_dir: str = _TORCH_DIR,
) -> bool:
    """Whether `new` is PyTorch's own wrapper of `old` (importing torch._dynamo wraps torch.manual_seed), read
    through the function type's slots only."""
    if _type(new) is not _function or not _only(new.__dict__):
        return False
    if new.__dict__.get("__wrapped__", None) is not old:
        return False
    filename = new.__code__.co_filename
    return _type(filename) is _str and filename.startswith(_torch_dir)


class Watched:
    """One namespace as it was: its dict, its owner's type, and the values that must stay: every value
    (`whole`: no entry added either; `every`: the judge's own modules and classes, whose constants and
    references decide what it does), else the callables and the modules (`torch.cuda` swapped for an object
    of the candidate's would answer every `torch.cuda.…` the judge looks up)."""

    def __init__(self, label: str, owner: Any, whole: bool, every: bool = False) -> None:
        self.label = label
        self.owner = owner
        self.owner_type = type(owner)
        self.namespace = vars(owner)  # a module's dict, or a class's mapping: the objects, not a lookup
        self.whole = whole
        kept = {
            key: value
            for key, value in list(self.namespace.items())
            if type(key) is str and (whole or every or callable(value) or isinstance(value, ModuleType))
        }
        self.keys = tuple(kept)
        self.values = tuple(kept.values())
        self.size = len(self.namespace)
        # The kept names' values in one lookup each, made in C (a check runs after every timed call).
        self._lookup = operator.itemgetter(*self.keys) if len(self.keys) > 1 else None
        pin_methods(self)

    def changes(
        self,
        _type: Any = type,
        _only: Any = _only_names,
        _all: Any = all,
        _map: Any = map,
        _is: Any = operator.is_,
        _len: Any = len,
        _sorted: Any = sorted,
        _set: Any = set,
        _zip: Any = zip,
        _rewrapped: Any = _rewrapped_by_torch,
    ) -> list[str]:
        """What changed: the owner's class, a key that is not a name, an entry replaced or (whole) added."""
        if _type(self.owner) is not self.owner_type:
            return [f"{self.label}.__class__"]
        if not _only(self.namespace):
            return [f"{self.label} (a key that is not a name)"]
        now = self._now()
        if _all(_map(_is, now, self.values)):
            if self.whole and _len(self.namespace) != self.size:
                added = _sorted(_set(self.namespace) - _set(self.keys))
                return [f"{self.label}.{added[0] if added else '?'}"]
            return []
        return [
            f"{self.label}.{key}"
            for key, old, new in _zip(self.keys, self.values, now, strict=True)
            if new is not old and not _rewrapped(new, old)
        ]

    def _now(
        self, _tuple: Any = tuple, _map: Any = map, _repeat: Any = itertools.repeat, _missing: Any = _MISSING
    ) -> tuple[Any, ...]:
        """The kept names' values now (_MISSING for a name gone), looked up in a dict of names only."""
        if self._lookup is not None:
            try:
                return self._lookup(self.namespace)
            except KeyError:  # a name is gone: the lookups one by one say which
                pass
        return _tuple(_map(self.namespace.get, self.keys, _repeat(_missing)))


def _watched() -> list[Watched]:
    watched = []
    for name, module in _harness_modules():
        watched.append(Watched(name, module, whole=False, every=True))
        for attribute, value in list(vars(module).items()):
            if isinstance(value, type) and value.__module__ == name:
                watched.append(Watched(f"{name}.{attribute}", value, whole=False, every=True))
    for name in WATCHED_MODULES:
        with contextlib.suppress(ImportError):
            watched.append(Watched(name, importlib.import_module(name), whole=False))
    for name in WATCHED_IF_LOADED:
        if isinstance(loaded := sys.modules.get(name), ModuleType):
            watched.append(Watched(name, loaded, whole=False))
    for module_name, attribute in WATCHED_CLASSES:
        with contextlib.suppress(ImportError, AttributeError):
            cls = getattr(importlib.import_module(module_name), attribute)
            for base in cls.__mro__[:-1]:  # object is immutable
                watched.append(Watched(f"{module_name}.{base.__name__}", base, whole=True))
    return watched


def _call(function: Any, argument: Any) -> Any:
    return function(argument)


_CALL = getattr(operator, "call", _call)  # in C from Python 3.11


class Accepted:
    """Every watched namespace as a full comparison last found it whole: its owner's type, its length, each of
    its keys and each value kept, all by identity (sys.modules's keys too).

    A check after a call first asks whether everything is still identical (holds): then the full comparison
    would find what it found then, nothing, and it is not made. Its passes run in C and call nothing of the
    namespaces: the keys are compared before any lookup (identical keys are the plain strings they were), and
    each lookup is by one of them. Any difference, a benign one included (torch binding a submodule it
    imports lazily), sends the check to the full comparison, which names what changed."""

    def __init__(self, watched: list[Watched], modules: dict[str, ModuleType]) -> None:
        """Made right after a full comparison found nothing: no candidate code runs in between."""
        self.owners = tuple(w.owner for w in watched)
        self.owner_types = tuple(w.owner_type for w in watched)
        self.namespaces = (*(w.namespace for w in watched), modules)
        self.lengths = list(map(len, self.namespaces))
        self.keys = tuple(itertools.chain.from_iterable(self.namespaces))
        looked_up = [w for w in watched if w.keys]
        self.looked_up = tuple(w.namespace for w in looked_up)
        # The first key twice: a getter of one name would return the value itself, not a tuple of one.
        self.getters = tuple(operator.itemgetter(*w.keys, w.keys[0]) for w in looked_up)
        self.values = tuple(itertools.chain.from_iterable(map(_call, self.getters, self.looked_up)))
        pin_methods(self)

    def holds(
        self,
        _all: Any = all,
        _map: Any = map,
        _is: Any = operator.is_,
        _type: Any = type,
        _len: Any = len,
        _list: Any = list,
        _chain: Any = itertools.chain.from_iterable,
        _call: Any = _CALL,
    ) -> bool:
        """Whether every owner's type, length, key and kept value is the one accepted."""
        return (
            _all(_map(_is, _map(_type, self.owners), self.owner_types))
            and _list(_map(_len, self.namespaces)) == self.lengths  # lists of ints: compared in C
            and _all(_map(_is, _chain(self.namespaces), self.keys))
            and _all(_map(_is, _chain(_map(_call, self.getters, self.looked_up)), self.values))
        )


class Snapshot:
    """Namespaces, threads and signal handlers as they were before candidate code ran."""

    def __init__(self) -> None:
        self.watched = _watched()
        self._modules: dict[str, ModuleType] = sys.modules
        # The registry itself, held by the judge: a check reads its keys and calls nothing the candidate made.
        self._active: dict[Any, Any] = threading._active  # type: ignore[attr-defined]  # private: not in typeshed
        self._running_python = sys._current_frames
        self.threads = self._thread_idents()
        self.signals = {number: signal.getsignal(number) for number in signal.valid_signals()}
        self.accepted = Accepted(self.watched, self._modules)
        pin_methods(self)

    def _thread_idents(self) -> set[int]:
        """Threading's registered threads and every thread running Python code (raw `_thread` ones too).
        The frames are dropped unread; a key that is not an int is reported as a thread of its own."""
        keys = [*dict.keys(self._active), *self._running_python()]
        return {key if type(key) is int else -1 for key in keys}

    def tampered(
        self, _only: Any = _only_names, _by_origin: Any = WATCHED_BY_ORIGIN, _accepted: Any = Accepted
    ) -> list[str]:
        """Names now bound to other objects than at the snapshot (fast enough to run after every call)."""
        changed: list[str] = []
        if not self.accepted.holds():
            # Each namespace's comparison is pinned on it (Watched.__init__): not what the class holds later.
            changed = [label for watched in self.watched for label in watched.changes()]
            if not _only(self._modules):
                return [*changed, "sys.modules (a key that is not a name)"]
            if not changed:  # a benign change (a name added, a torch wrapper): the next checks start from it
                self.accepted = _accepted(self.watched, self._modules)
        for module, attribute, package in _by_origin:
            loaded = self._modules.get(module)
            if loaded is not None and not self._defined_in(loaded, attribute, package):
                changed.append(f"{module}.{attribute}")
        return changed

    def _defined_in(self, module: Any, attribute: str, package: str) -> bool:
        """Whether `module.attribute` is a plain function of `package`'s files; found through the module's
        dict and read through types' own slots only (the module came from the candidate's reach)."""
        root = self._modules.get(package)
        if type(module) is not ModuleType or type(root) is not ModuleType:
            return False
        namespace, root_namespace = module.__dict__, root.__dict__
        if not _only_names(namespace) or not _only_names(root_namespace):
            return False
        function, root_file = namespace.get(attribute), root_namespace.get("__file__")
        if type(function) is not FunctionType or type(root_file) is not str:
            return False
        filename = function.__code__.co_filename
        return type(filename) is str and Path(filename).resolve().is_relative_to(
            Path(root_file).resolve().parent
        )

    def new_threads(self) -> list[int]:
        """Threads now alive that were not at the snapshot, by ident. Nothing is asked of them (no
        `is_alive()`, no `.name`): a registry entry is the candidate's object, and a call on it would run its
        code after the timer stopped; a thread's entry and its frames go when it ends."""
        return sorted(self._thread_idents() - self.threads)

    def running_code(self, ident: int) -> list[Any]:
        """The code objects on a thread's stack now, innermost first (empty for a thread not running Python).
        Read from the interpreter's own frames: nothing of the thread's is called."""
        frame = self._running_python().get(ident)
        codes = []
        while frame is not None:
            codes.append(frame.f_code)
            frame = frame.f_back
        return codes

    def new_signal_handlers(self) -> list[str]:
        """Signals whose handler changed (a handler runs between the judge's calls and sees its frame)."""
        changed = []
        for number, handler in self.signals.items():
            with contextlib.suppress(ValueError, OSError):
                if signal.getsignal(number) is not handler:
                    changed.append(signal.Signals(number).name)
        return changed


# Every name a tensor answers through its class: an entry of the same name in a tensor's own dict would
# answer instead (a method such as `detach` is not a data descriptor), and run when the judge calls it.
_TENSOR_NAMES = frozenset(name for cls in torch.Tensor.__mro__ for name in vars(cls))


def shadowed(tensor: Any) -> str | None:
    """What makes a tensor the judge will read not a plain one: its class changed, or an entry of its own
    dict shadowing a tensor's method or attribute (named); None when it is plain."""
    if type(tensor) is not torch.Tensor:
        return "__class__"
    own = tensor.__dict__  # torch.Tensor's own slot: its class is watched whole
    if not own:
        return None
    if not _only_names(own):
        return "a key that is not a name"
    return next((key for key in own if key in _TENSOR_NAMES), None)


def modes_left() -> str | None:
    """A PyTorch mode the candidate left active after its call (its code would run inside every later
    operator the judge calls), named; None when the mode stacks are empty."""
    if torch._C._len_torch_function_stack():
        return "a TorchFunctionMode"
    if torch._C._len_torch_dispatch_stack():
        return "a TorchDispatchMode"
    return None


def describe(names: list[str]) -> str:
    """One line naming what was replaced."""
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"the solution replaced {shown}"
