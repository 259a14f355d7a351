"""The judge's guard inside the candidate's process: introspection refused, observers kept on.

The candidate shares its worker process with the judge's timing loop, its recorders and its
bookkeeping. Two things keep that state out of its reach, whatever the spelling:

- An audit hook (PEP 578), installed before the solution is imported and impossible to remove, refuses
  what reaches the judge's frames or objects when candidate code asks for it: `sys._getframe` (also
  through `inspect` or `traceback`), `sys._current_frames`, frames taken from tracebacks, generators
  and coroutines, `gc.get_objects`/`get_referrers`/`get_referents`, trace and profile functions,
  `sys.monitoring`, further audit hooks, symbols of the interpreter's C API through ctypes, and code
  compiled or written under a trusted file name (which would make candidate frames look trusted).
- Tripwires replace the Python entry points that switch the judge's observers off (the profiler that
  records operators and GPU work, RecordFunction) and that install signal handlers (a handler runs in
  the middle of the judge's code and is handed its frame). The originals are held only by the audit hook, which
  is reachable from nowhere in Python: a tripwire raises a private audit event and the hook runs the
  original, unless candidate code is anywhere on the stack.

Each refusal raises an error in the candidate and is recorded: the candidate is rejected at the next
check even if it catches the error. Whose code is whose is decided by where it lives: the standard
library, installed packages, cudasmith itself and the problem file are trusted; the solution and what
it compiles or writes elsewhere is the candidate's. Code with a pseudo file name ("<string>") counts as
whoever called it.

Raw memory through ctypes is refused where a call can be seen: objects made at an address
(`from_address`, `from_buffer`), `string_at`, `cast`, `memmove`, `memset`, and libc's copies reached by
name. What no hook sees stays possible: indexing a ctypes pointer past its object, an array interface
naming any address (numpy), native code the solution compiles. So nothing here is what a verdict rests on:
the parent's own clock, the judge's frozen read of the outputs and the evidence a reply must carry are
(harness/timed.py, harness/witnesses/rechecks.py).
"""

from __future__ import annotations

import _thread
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import FrameType, FunctionType
from typing import Any

from cudasmith.harness.wire.status import Rule
from cudasmith.harness.workers.origins import (
    WRITE_EVENTS,
    Origins,
    opens_trusted_directory,
    trusted_roots,
    written_paths,
)

# A refused attempt: the rule it breaks and the reason a verdict gives.
Violation = tuple[Rule, str]
# Events refused when the code asking is the candidate's (directly, or through a helper that hands
# frames or installs tracers on its behalf): libraries use frames, gc and audit hooks for their own
# purposes (typing, enum, warnings, dataclasses, torch.compile) and must keep doing so.
CALLER_EVENTS = {
    "sys._getframe": (Rule.INTROSPECTION, "reading the judge's frames (sys._getframe)"),
    "sys._getframemodulename": (Rule.INTROSPECTION, "reading the judge's frames (sys._getframemodulename)"),
    "sys._current_frames": (Rule.INTROSPECTION, "reading every thread's frames (sys._current_frames)"),
    "sys._current_exceptions": (
        Rule.INTROSPECTION,
        "reading every thread's frames (sys._current_exceptions)",
    ),
    "sys.settrace": (Rule.INTROSPECTION, "installing a trace function"),
    "sys.setprofile": (Rule.INTROSPECTION, "installing a profile function"),
    "sys.addaudithook": (Rule.TAMPERING, "installing an audit hook"),
    "gc.get_objects": (Rule.INTROSPECTION, "scavenging live objects (gc.get_objects)"),
    "gc.get_referrers": (Rule.INTROSPECTION, "scavenging live objects (gc.get_referrers)"),
    "gc.get_referents": (Rule.INTROSPECTION, "scavenging live objects (gc.get_referents)"),
}
FRAME_ATTRIBUTES = {"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"}
# A function's state that decides what calling it runs: candidate code may change its own functions' only.
FUNCTION_STATE = {"__code__", "__defaults__", "__kwdefaults__"}
# Standard-library functions that hand frames to their caller: a frame asked for through one of them is
# asked for by whoever called it. (Functions that only format frames, such as traceback.print_exc, are
# not among them: they return text.)
FRAME_HANDING = {
    ("inspect", "currentframe"), ("inspect", "stack"), ("inspect", "trace"), ("inspect", "getouterframes"),
    ("inspect", "getinnerframes"), ("traceback", "walk_stack"), ("traceback", "walk_tb"),
    ("logging", "currentframe"), ("logging", "<lambda>"), ("pdb", "set_trace"), ("bdb", "set_trace"),
}  # fmt: skip
# Standard-library modules that install trace or profile functions on their caller's behalf.
TRACER_MODULES = frozenset({"profile", "cProfile", "bdb", "pdb", "trace", "threading"})
# ctypes' own Python helpers (cast, string_at) pass a raw-memory request on for whoever called them.
HANDING_MODULES = TRACER_MODULES | {"ctypes"}
# Audit events of ctypes objects made over raw memory: an address (from_address, and from_buffer, which
# ends there) and reads of an address (string_at).
RAW_MEMORY_EVENTS = {
    "ctypes.cdata": "making a ctypes object at a raw address (from_address, from_buffer)",
    "ctypes.string_at": "reading raw memory (ctypes.string_at)",
    "ctypes.wstring_at": "reading raw memory (ctypes.wstring_at)",
}
# C functions that copy or fill raw memory, reached through ctypes by name (CDLL(None).memcpy).
RAW_MEMORY_SYMBOLS = frozenset({
    "memcpy", "memmove", "memset", "mempcpy", "memccpy", "bcopy", "wmemcpy", "wmemmove", "wmemset",
    "process_vm_readv", "process_vm_writev",
})  # fmt: skip
# The addresses ctypes builds its raw-memory helpers from: gone from its namespace, so that no candidate
# builds its own `cast` or `memmove` around the tripwires.
RAW_MEMORY_ADDRESSES = ("_cast_addr", "_memmove_addr", "_memset_addr", "_string_at_addr", "_wstring_at_addr")
# Symbols of the interpreter's C API that libraries reach through ctypes for DLPack capsules: harmless.
C_API_ALLOWED = ("PyCapsule_",)
# Tripwired entry points: what switches the profiler or RecordFunction on or off, changes what the profiler
# collects or where its buffers go, and installing a signal handler (a handler runs between the judge's
# own statements and receives its frame, with no audited call). Names a torch version lacks are skipped.
TRIPWIRED = {
    "torch._C._autograd": (
        "_disable_profiler", "_disable_profiler_legacy", "_enable_profiler", "_enable_profiler_legacy",
        "_enable_record_function", "_prepare_profiler", "_toggle_collection_dynamic", "_kineto_step",
    ),
    "torch._C._profiler": (
        "_add_execution_trace_observer", "_remove_execution_trace_observer", "_enable_execution_trace_observer",
        "_disable_execution_trace_observer", "_cupti_monitor_reset_buffers",
    ),
    "signal": ("signal",),
    "_signal": ("signal",),
    # Every Python thread starts here (threading too): counted until its function returns, so a thread
    # started at the end of a call is seen before it ever ran (the interpreter lists it only once it runs).
    "_thread": ("start_new_thread", "start_joinable_thread", "start_new"),
    # A second copy of a builtin module holds the functions the tripwires replaced: not for candidate code.
    "_imp": ("create_builtin",),
    # ctypes' raw-memory helpers (cast's own is `_cast`): no audit event of Python's reports them.
    "ctypes": ("_cast", "memmove", "memset"),
}  # fmt: skip
WIRED_BUILTINS = frozenset({"_thread", "_signal", "_imp"})
# The standard library's machinery between a thread's starter and `_thread` (thread pools, queues), and
# the compiler whose threads --rules kernelbench allows (torch.compile's Dynamo and Inductor).
THREAD_MACHINERY = (
    "threading",
    "concurrent.futures",
    "queue",
    "multiprocessing",
    "cudasmith.harness.workers.audit",
)
COMPILER_MODULES = ("torch._inductor", "torch._dynamo")
# Symbols of PyTorch's C++ (at::, c10::, torch::) reached through ctypes: ATen below the dispatcher.
TORCH_CPP_SYMBOLS = ("_ZN2at", "_ZNK2at", "_ZN3c10", "_ZNK3c10", "_ZN5torch", "_ZNK5torch")
TRIPWIRE_EVENT = "cudasmith.tripwire"


class Refused(RuntimeError):
    """Raised in the candidate when it reaches for the judge's state."""


def _frames(start: FrameType | None) -> Iterator[FrameType]:
    frame = start
    while frame is not None:
        yield frame
        frame = frame.f_back


def _module_name(frame: FrameType) -> str:
    return str(frame.f_globals.get("__name__", ""))


class Guard:
    """The installed audit hook's state: what was refused, and how many threads started since it was
    installed have not ended: the candidate's own, and the compiler's (torch.compile's, which starts its
    own workers), known by their idents."""

    def __init__(self, origins: Origins) -> None:
        self.origins = origins
        self.violations: list[Violation] = []
        self.busy = False
        # Where each of those running threads was started (the first frame above the thread machinery).
        self.starters: list[str] = []
        self.compiler: set[int] = set()
        self.lock = _thread.allocate_lock()

    def first_violation(self) -> Violation | None:
        """The first refused attempt, as its rule and a reason, or None."""
        return self.violations[0] if self.violations else None

    def threads_running(self) -> int:
        """Threads started since the hook was installed (not by the compiler) whose function has not returned."""
        return len(self.starters)

    def first_starter(self) -> str:
        """Where the first of the running threads was started: 'module.function', or '?'."""
        with self.lock:
            return self.starters[0] if self.starters else "?"

    def compiler_threads(self) -> frozenset[int]:
        """The idents of the compiler's threads whose function has not returned."""
        with self.lock:
            return frozenset(self.compiler)

    def start_counted(
        self,
        start: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        compiler: bool = False,
        starter: str = "?",
    ) -> Any:
        """Start a thread through `start`, counted until its function returns (`compiler`: by its ident, as
        one of the compiler's; `starter`: where it was started, for the reason a check gives)."""
        function, rest = args[0], args[1:]
        lock, ident = self.lock, _thread.get_ident

        def counted(*call_args: Any, **call_kwargs: Any) -> Any:
            if compiler:
                with lock:
                    self.compiler.add(ident())
            try:
                return function(*call_args, **call_kwargs)
            finally:
                with lock:
                    if compiler:
                        self.compiler.discard(ident())
                    else:
                        self.starters.remove(starter)

        if not compiler:
            with lock:
                self.starters.append(starter)
        try:
            return start(counted, *rest, **kwargs)
        except BaseException:
            if not compiler:
                with lock:
                    self.starters.remove(starter)
            raise


@dataclass(frozen=True)
class Findings:
    """What the installed hook found, as the judge reads it. Keep it out of module globals, so that only
    the judge's own frames hold it."""

    first_violation: Callable[[], Violation | None]
    threads_running: Callable[[], int]
    first_starter: Callable[[], str]
    compiler_threads: Callable[[], frozenset[int]]


def install(problem_file: Path | None = None, solution: Path | None = None, threads: bool = True) -> Findings:
    """Install the audit hook and the tripwires (once per process, before the solution is imported);
    `threads=False` refuses the candidate every thread (where operators are recorded on the caller's only).
    """
    roots, files = trusted_roots((problem_file,) if problem_file is not None else (), solution)
    guard = Guard(Origins(roots, files))
    # Imports the candidate triggers would write bytecode under trusted roots on its behalf: none is written.
    sys.dont_write_bytecode = True
    originals = _tripwire(guard, TRIPWIRED)
    ctypes_module = sys.modules["ctypes"]
    for name in RAW_MEMORY_ADDRESSES:
        ctypes_module.__dict__.pop(name, None)
    getframe = sys._getframe
    origin_of = guard.origins.of

    def refuse(rule: Rule, what: str) -> None:
        guard.violations.append((rule, f"the solution tried {what}"))
        raise Refused(f"cudasmith: {what} is refused inside a candidate")

    def caller_is_candidate(frame: FrameType | None) -> bool:
        """The code asking: the first frame that is neither a frame-handing helper nor a pseudo file."""
        for current in _frames(frame):
            kind = origin_of(current.f_code)
            if kind == "neutral":
                continue
            module = _module_name(current)
            if kind == "trusted" and (
                (module, current.f_code.co_name) in FRAME_HANDING or module in HANDING_MODULES
            ):
                continue
            return kind == "candidate"
        return False

    def thread_starter(frame: FrameType | None) -> tuple[bool, str]:
        """Whether a thread is started on torch.compile's behalf, and where it was started ('module.function'
        of the first frame above the standard library's thread machinery; '?': none). Whose it is: the
        nearest code above the libraries that started it (a progress bar's monitor, a pool) that is either
        the compiler's or the candidate's. A candidate cannot make its code pass for the compiler's (code
        under a trusted file name is refused), nor hide behind a library: its own frame comes first."""
        where = None
        for current in _frames(frame):
            kind, module = origin_of(current.f_code), _module_name(current)
            if kind == "trusted" and module.startswith(THREAD_MACHINERY):
                continue
            where = where or f"{module or current.f_code.co_filename}.{current.f_code.co_name}"
            if kind == "candidate":
                return False, where
            if kind == "trusted" and module.startswith(COMPILER_MODULES):
                return True, where
        return False, where or "?"

    def candidate_on_stack(frame: FrameType | None) -> bool:
        return any(origin_of(current.f_code) == "candidate" for current in _frames(frame))

    def asking() -> FrameType | None:
        """The frame that made the audited call (the hook's caller's caller)."""
        guard.busy = True
        try:
            return getframe(2)
        finally:
            guard.busy = False

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if guard.busy:
            return
        if event == TRIPWIRE_EVENT:
            name, call_args, call_kwargs, box = args
            if name == "_imp.create_builtin":
                module = str(getattr(call_args[0], "name", ""))
                if module in WIRED_BUILTINS and candidate_on_stack(asking()):
                    refuse(Rule.TAMPERING, f"making a second copy of the builtin module {module}")
                # The name checked is the name made (a spec could answer differently when asked again).
                box.append(originals[name](ModuleSpec(module, None, origin="built-in")))
                return
            if name.startswith("ctypes."):
                proxy = asking()  # the tripwire's frame: whoever called it is asking
                if proxy is not None and caller_is_candidate(proxy.f_back):
                    refuse(Rule.INTROSPECTION, f"reaching raw memory through {name.replace('._', '.')}")
                box.append(originals[name](*call_args, **call_kwargs))
                return
            if name.startswith("_thread."):
                if not threads and candidate_on_stack(asking()):
                    refuse(
                        Rule.PROCESSES_THREADS,
                        f"starting a thread ({name}; this PyTorch records operators on the caller's only)",
                    )
                compiler, starter = thread_starter(asking())
                box.append(guard.start_counted(originals[name], call_args, call_kwargs, compiler, starter))
                return
            if candidate_on_stack(asking()):
                if name.endswith(".signal"):
                    refuse(Rule.SIGNALS, f"installing a signal handler ({name})")
                refuse(Rule.TAMPERING, f"switching the judge's recording off ({name})")
            box.append(originals[name](*call_args, **call_kwargs))
        elif event.startswith("sys.monitoring"):
            if caller_is_candidate(asking()):
                refuse(Rule.INTROSPECTION, f"using {event}")
        elif event in CALLER_EVENTS:
            if caller_is_candidate(asking()):
                refuse(*CALLER_EVENTS[event])
        elif event in RAW_MEMORY_EVENTS:
            if caller_is_candidate(asking()):
                refuse(Rule.INTROSPECTION, RAW_MEMORY_EVENTS[event])
        elif event == "object.__getattr__":
            if len(args) > 1 and args[1] in FRAME_ATTRIBUTES and caller_is_candidate(asking()):
                refuse(Rule.INTROSPECTION, f"reading a frame through .{args[1]}")
        elif event in ("object.__setattr__", "object.__delattr__"):
            if len(args) > 1 and args[1] in FUNCTION_STATE and type(args[0]) is FunctionType:
                code = args[0].__code__
                if origin_of(code) != "candidate" and caller_is_candidate(asking()):
                    refuse(
                        Rule.TAMPERING,
                        f"changing the {args[1]} of the judge's or a library's function ({code.co_name})",
                    )
        elif event == "ctypes.dlsym":
            symbol = str(args[1]) if len(args) > 1 else ""
            interpreter = symbol.startswith(("Py", "_Py")) and not symbol.startswith(C_API_ALLOWED)
            if interpreter and candidate_on_stack(asking()):
                refuse(Rule.INTROSPECTION, f"reaching the interpreter's C API through ctypes ({symbol})")
            if symbol in RAW_MEMORY_SYMBOLS and candidate_on_stack(asking()):
                refuse(Rule.INTROSPECTION, f"reaching raw memory through ctypes ({symbol})")
            if symbol.startswith(TORCH_CPP_SYMBOLS) and candidate_on_stack(asking()):
                refuse(
                    Rule.PYTORCH_COMPUTE,
                    f"calling PyTorch's C++ through ctypes ({symbol}: ATen below the dispatcher)",
                )
        elif event in ("compile", "code.__new__"):
            filename = args[1] if len(args) > 1 else None
            if (
                isinstance(filename, (str, bytes))
                and guard.origins.is_trusted_path(os.fsdecode(filename))
                and caller_is_candidate(asking())
            ):
                refuse(Rule.TAMPERING, f"compiling code under a trusted file name ({os.fsdecode(filename)})")
        elif event == "marshal.loads":
            if caller_is_candidate(asking()):
                refuse(Rule.TAMPERING, "loading marshalled code objects")
        elif event == "open" or event in WRITE_EVENTS:
            # Whoever does the writing (shutil, pathlib) does it for the candidate when its code is below.
            for path in written_paths(event, args):
                if guard.origins.is_trusted_now(path) and candidate_on_stack(asking()):
                    refuse(Rule.TAMPERING, f"writing into trusted code ({event} {path})")
            if (
                event == "open"
                and opens_trusted_directory(args, guard.origins)
                and candidate_on_stack(asking())
            ):
                refuse(
                    Rule.TAMPERING,
                    f"opening a trusted directory ({args[0]!r}: a descriptor to write under it)",
                )

    sys.addaudithook(hook)
    return Findings(guard.first_violation, guard.threads_running, guard.first_starter, guard.compiler_threads)


def _tripwire(guard: Guard, wired: dict[str, tuple[str, ...]]) -> dict[str, Callable[..., Any]]:
    """Replace the observers' on/off switches (and what else `wired` names), everywhere they are bound, by
    calls through the audit hook."""
    import importlib

    originals: dict[str, Callable[..., Any]] = {}
    replacements: dict[int, Callable[..., Any]] = {}
    audit = sys.audit
    for module_name, names in wired.items():
        module = importlib.import_module(module_name)
        for name in names:
            value = getattr(module, name, None)
            if not callable(value) or isinstance(value, type):
                continue
            key = f"{module_name}.{name}"
            originals[key] = value

            def proxy(*args: Any, __key: str = key, **kwargs: Any) -> Any:
                box: list[Any] = []
                audit(TRIPWIRE_EVENT, __key, args, kwargs, box)
                return box[0]

            proxy.__name__ = proxy.__qualname__ = name
            replacements[id(value)] = proxy
            setattr(module, name, proxy)
    # Modules that imported a switch by name (torch.autograd.profiler does) get the tripwire too.
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for name, value in list(namespace.items()):
            if callable(value) and id(value) in replacements and replacements[id(value)] is not value:
                namespace[name] = replacements[id(value)]
    return originals
