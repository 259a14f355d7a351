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

What this cannot stop is raw memory access through ctypes; the tamper checks (tamper.py) and the
judge's habit of capturing what it uses before the solution loads are the other layers.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import sys
import sysconfig
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import CodeType, FrameType, FunctionType
from typing import Any

from cudasmith.harness.wire.status import Rule

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
}  # fmt: skip
WIRED_BUILTINS = frozenset({"_thread", "_signal", "_imp"})
# Symbols of PyTorch's C++ (at::, c10::, torch::) reached through ctypes: ATen below the dispatcher.
TORCH_CPP_SYMBOLS = ("_ZN2at", "_ZNK2at", "_ZN3c10", "_ZNK3c10", "_ZN5torch", "_ZNK5torch")
TRIPWIRE_EVENT = "cudasmith.tripwire"
# Audit events that write, move, link, truncate or remove files: the positions of the paths they write,
# each with the position of the directory descriptor it is relative to (None: none). Writing trusted code
# under any of them (a `sitecustomize.py` beside the package runs in every later process) is refused when
# the candidate asks; so is a hard link to a trusted file (writing the link writes the file).
WRITE_EVENTS: dict[str, tuple[tuple[int, int | None], ...]] = {
    "os.rename": ((0, 2), (1, 3)), "os.link": ((0, 2), (1, 3)), "os.symlink": ((1, 2),),
    "os.truncate": ((0, None),), "os.remove": ((0, 1),), "os.rmdir": ((0, 1),), "os.mkdir": ((0, 2),),
    "os.chmod": ((0, 2),), "os.chown": ((0, 3),), "os.utime": ((0, 3),), "os.setxattr": ((0, None),),
    "os.removexattr": ((0, None),), "shutil.copyfile": ((1, None),), "shutil.copymode": ((1, None),),
    "shutil.copystat": ((1, None),), "shutil.copytree": ((1, None),), "shutil.move": ((0, None), (1, None)),
    "shutil.rmtree": ((0, 1),), "shutil.unpack_archive": ((1, None),), "shutil.chown": ((0, None),),
}  # fmt: skip


class Refused(RuntimeError):
    """Raised in the candidate when it reaches for the judge's state."""


def trusted_roots(
    extra_files: tuple[Path, ...] = (), solution: Path | None = None
) -> tuple[tuple[str, ...], frozenset[str]]:
    """Directories whose code is trusted, and files: the standard library, installed packages, cudasmith,
    and the import path as it was before the solution was loaded (packages on PYTHONPATH, or installed
    with `pip --target`), except the working directory and any directory holding the solution."""
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    roots.add(str(Path(__file__).resolve().parents[1]))  # the cudasmith package
    normalised = {os.path.realpath(r) + os.sep for r in roots if r}
    solution_real = os.path.realpath(solution) if solution is not None else None
    working = os.path.realpath(os.getcwd()) + os.sep
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        root = os.path.realpath(entry) + os.sep
        if root == working or (solution_real is not None and solution_real.startswith(root)):
            continue
        normalised.add(root)
    return tuple(sorted(normalised)), frozenset(os.path.realpath(str(f)) for f in extra_files)


class Origins:
    """Whose code a code object is: 'trusted', 'candidate', or 'neutral' (a pseudo file name)."""

    def __init__(self, roots: tuple[str, ...], files: frozenset[str]) -> None:
        self.roots = roots
        self.files = files
        self._known: dict[str, str] = {}

    def of_path(self, filename: str) -> str:
        if filename not in self._known:
            if filename.startswith("<frozen "):
                kind = "trusted"
            elif filename.startswith("<") or not filename:
                kind = "neutral"
            else:
                real = os.path.realpath(filename)
                kind = "trusted" if real in self.files or real.startswith(self.roots) else "candidate"
            self._known[filename] = kind
        return self._known[filename]

    def of(self, code: CodeType) -> str:
        return self.of_path(code.co_filename)

    def is_trusted_path(self, path: str) -> bool:
        """A real file under a trusted root (compiling or writing code there is pretending to be trusted)."""
        return not path.startswith("<") and self.of_path(path) == "trusted"

    def is_trusted_now(self, path: str) -> bool:
        """Like is_trusted_path, resolved afresh (a path seen before may be a symlink into a root now)."""
        real = os.path.realpath(path)
        return real in self.files or (real + os.sep).startswith(self.roots)  # a root itself included


def _writes(mode: object, flags: object = None) -> bool:
    """Whether an open() mode (text) or os.open() flags (os.O_*) write."""
    if isinstance(mode, str) and any(flag in mode for flag in "wax+"):
        return True
    for value in (mode, flags):
        if type(value) is int and value & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND):
            return True
    return False


def _written_paths(event: str, args: tuple[Any, ...]) -> list[str]:
    """The paths an audited call writes (open for writing, rename, link, copy, remove…); [] for others.
    A path relative to a directory descriptor is joined to that directory."""
    if event == "open":
        writes = len(args) > 1 and _writes(args[1], args[2] if len(args) > 2 else None)
        positions: tuple[tuple[int, int | None], ...] = ((0, None),) if writes else ()
    else:
        positions = WRITE_EVENTS.get(event, ())
    paths = []
    for position, directory in positions:
        value = args[position] if position < len(args) else None
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if not isinstance(value, (str, bytes)):
            continue  # a file descriptor: opening it for writing was the write
        path = os.fsdecode(value)
        descriptor = args[directory] if directory is not None and directory < len(args) else None
        if type(descriptor) is int and descriptor >= 0 and not os.path.isabs(path):
            with contextlib.suppress(OSError):
                path = os.path.join(os.readlink(f"/proc/self/fd/{descriptor}"), path)
        paths.append(path)
    return paths


def _opens_trusted_directory(args: tuple[Any, ...], origins: Origins) -> bool:
    """Whether an open() opens a directory under a trusted root (writes relative to its descriptor are
    not audited with their directory)."""
    path = args[0] if args else None
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, (str, bytes)):
        return False
    return os.path.isdir(path) and origins.is_trusted_now(os.fsdecode(path))


def _frames(start: FrameType | None) -> Iterator[FrameType]:
    frame = start
    while frame is not None:
        yield frame
        frame = frame.f_back


def _module_name(frame: FrameType) -> str:
    return str(frame.f_globals.get("__name__", ""))


class Guard:
    """The installed audit hook's state: what was refused, and how many threads started since it was
    installed have not ended."""

    def __init__(self, origins: Origins) -> None:
        self.origins = origins
        self.violations: list[Violation] = []
        self.busy = False
        self.running = 0
        self.lock = _thread.allocate_lock()

    def first_violation(self) -> Violation | None:
        """The first refused attempt, as its rule and a reason, or None."""
        return self.violations[0] if self.violations else None

    def threads_running(self) -> int:
        """Threads started since the hook was installed whose function has not returned."""
        return self.running

    def start_counted(self, start: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Start a thread through `start`, counted until its function returns."""
        function, rest = args[0], args[1:]
        lock = self.lock

        def counted(*call_args: Any, **call_kwargs: Any) -> Any:
            try:
                return function(*call_args, **call_kwargs)
            finally:
                with lock:
                    self.running -= 1

        with lock:
            self.running += 1
        try:
            return start(counted, *rest, **kwargs)
        except BaseException:
            with lock:
                self.running -= 1
            raise


@dataclass(frozen=True)
class Findings:
    """What the installed hook found, as the judge reads it. Keep it out of module globals, so that only
    the judge's own frames hold it."""

    first_violation: Callable[[], Violation | None]
    threads_running: Callable[[], int]


def install(problem_file: Path | None = None, solution: Path | None = None, threads: bool = True) -> Findings:
    """Install the audit hook and the tripwires (once per process, before the solution is imported);
    `threads=False` refuses the candidate every thread (where operators are recorded on the caller's only).
    """
    roots, files = trusted_roots((problem_file,) if problem_file is not None else (), solution)
    guard = Guard(Origins(roots, files))
    # Imports the candidate triggers would write bytecode under trusted roots on its behalf: none is written.
    sys.dont_write_bytecode = True
    originals = _tripwire(guard, TRIPWIRED)
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
                (module, current.f_code.co_name) in FRAME_HANDING or module in TRACER_MODULES
            ):
                continue
            return kind == "candidate"
        return False

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
            if name.startswith("_thread."):
                if not threads and candidate_on_stack(asking()):
                    refuse(
                        Rule.PROCESSES_THREADS,
                        f"starting a thread ({name}; this PyTorch records operators on the caller's only)",
                    )
                box.append(guard.start_counted(originals[name], call_args, call_kwargs))
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
            for path in _written_paths(event, args):
                if guard.origins.is_trusted_now(path) and candidate_on_stack(asking()):
                    refuse(Rule.TAMPERING, f"writing into trusted code ({event} {path})")
            if (
                event == "open"
                and _opens_trusted_directory(args, guard.origins)
                and candidate_on_stack(asking())
            ):
                refuse(
                    Rule.TAMPERING,
                    f"opening a trusted directory ({args[0]!r}: a descriptor to write under it)",
                )

    sys.addaudithook(hook)
    return Findings(guard.first_violation, guard.threads_running)


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
