"""Naming what the sandbox refuses: the candidate's reads and writes outside its policy, seen by an audit hook.

The sandbox (sandbox.py) refuses such an access in the kernel, with EACCES or EROFS, which a candidate can
catch and ignore. This hook sees the same attempt from Python (`open`, `os.remove`, `sqlite3.connect`, …)
while candidate code is on the stack and records it, so the candidate is rejected under a named rule
(`sandbox-write: PATH`, `sandbox-read: PATH`) even where the kernel offers no sandbox at all. Accesses
made from C (a compiled kernel calling fopen) are refused by the kernel but not named here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

from cudasmith.harness.walls.confinement import PROC, Policy, device_nodes, own_proc_entry
from cudasmith.harness.wire.status import Rule
from cudasmith.harness.workers.audit import Violation

# Audited operations that change the file system, and which of their arguments are the paths changed.
WRITE_EVENTS: dict[str, tuple[int, ...]] = {
    "os.remove": (0,), "os.rmdir": (0,), "os.rename": (0, 1), "os.mkdir": (0,), "os.chmod": (0,),
    "os.chown": (0,), "os.truncate": (0,), "os.link": (1,), "os.symlink": (1,), "os.utime": (0,),
    "shutil.rmtree": (0,), "shutil.copyfile": (1,), "shutil.copytree": (1,), "shutil.move": (0, 1),
    "shutil.chown": (0,), "sqlite3.connect": (0,),
}  # fmt: skip
# Operations that change nothing when their path is there (mkdir) or is not (the removals).
NO_CHANGE_UNLESS = ("os.mkdir", "os.remove", "os.rmdir", "shutil.rmtree")
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _writes(mode: object, flags: object) -> bool:
    if isinstance(mode, str) and any(flag in mode for flag in "wax+"):
        return True
    return isinstance(flags, int) and bool(flags & WRITE_FLAGS)


def _below(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def install(policy: Policy, is_candidate: Callable[[CodeType], bool]) -> Callable[[], Violation | None]:
    """Watch the candidate's file accesses against `policy` (once per process, before the solution loads).

    Returns a function giving the first access outside the policy, as its rule and a reason, or None."""
    # Device nodes are written through (/dev/null, a GPU's), and the worker's own /proc entry (its threads'
    # names), as the sandbox's own rules allow.
    writable = (*(os.path.realpath(p) for p in policy.write), *device_nodes(), own_proc_entry())
    readable = (*(os.path.realpath(p) for p in policy.read), *writable, PROC)
    violations: list[Violation] = []
    getframe, realpath, fsdecode, join, getcwd = (
        sys._getframe,
        os.path.realpath,
        os.fsdecode,
        os.path.join,
        os.getcwd,
    )
    exists = os.path.lexists
    busy = [False]

    def candidate_on_stack() -> bool:
        frame: FrameType | None = getframe(2)
        while frame is not None:
            if is_candidate(frame.f_code):
                return True
            frame = frame.f_back
        return False

    def resolved(path: Any) -> str | None:
        if not isinstance(path, (str, bytes, os.PathLike)):
            return None  # a file descriptor: opened under the rules already
        return realpath(join(getcwd(), fsdecode(path)))

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if busy[0] or (event != "open" and event not in WRITE_EVENTS):
            return
        busy[0] = True
        try:
            if event == "open":
                writes = _writes(args[1] if len(args) > 1 else None, args[2] if len(args) > 2 else None)
                paths = [args[0]]
            else:
                writes, paths = True, [args[i] for i in WRITE_EVENTS[event] if i < len(args)]
            for raw in paths:
                path = resolved(raw)
                if path is None or (exists(path) == (event == "os.mkdir") and event in NO_CHANGE_UNLESS):
                    continue  # makedirs(exist_ok=True), or removing what is not there, changes nothing
                rule = Rule.SANDBOX_WRITE if writes and not _below(path, writable) else None
                rule = rule or (Rule.SANDBOX_READ if not writes and not _below(path, readable) else None)
                if rule and candidate_on_stack():
                    violations.append((rule, f"{rule}: {path} ({event})"))
        finally:
            busy[0] = False

    sys.addaudithook(hook)
    return lambda: violations[0] if violations else None
