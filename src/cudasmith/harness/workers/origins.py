"""Whose code is whose inside a candidate's worker: the judge's (and the libraries') trusted roots, and the
paths an audited call writes.

The audit hook (audit.py) asks these on every event it weighs, and the observers (observe.py, binaries.py,
runtimes.py) use the same answer for kernels and libraries: code under the standard library, installed
packages, cudasmith itself or the problem file is trusted; the solution's, and whatever it writes or
compiles elsewhere, is the candidate's.
"""

from __future__ import annotations

import contextlib
import os
import sys
import sysconfig
from pathlib import Path
from types import CodeType
from typing import Any

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


def trusted_roots(
    extra_files: tuple[Path, ...] = (), solution: Path | None = None
) -> tuple[tuple[str, ...], frozenset[str]]:
    """Directories whose code is trusted, and files: the standard library, installed packages, cudasmith,
    and the import path as it was before the solution was loaded (packages on PYTHONPATH, or installed
    with `pip --target`), except the working directory and any directory holding the solution."""
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    roots.add(str(Path(__file__).resolve().parents[2]))  # the cudasmith package
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


def writes(mode: object, flags: object = None) -> bool:
    """Whether an open() mode (text) or os.open() flags (os.O_*) write."""
    if isinstance(mode, str) and any(flag in mode for flag in "wax+"):
        return True
    for value in (mode, flags):
        if type(value) is int and value & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND):
            return True
    return False


def written_paths(event: str, args: tuple[Any, ...]) -> list[str]:
    """The paths an audited call writes (open for writing, rename, link, copy, remove…); [] for others.
    A path relative to a directory descriptor is joined to that directory."""
    if event == "open":
        written = len(args) > 1 and writes(args[1], args[2] if len(args) > 2 else None)
        positions: tuple[tuple[int, int | None], ...] = ((0, None),) if written else ()
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


def opens_trusted_directory(args: tuple[Any, ...], origins: Origins) -> bool:
    """Whether an open() opens a directory under a trusted root (writes relative to its descriptor are
    not audited with their directory)."""
    path = args[0] if args else None
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, (str, bytes)):
        return False
    return os.path.isdir(path) and origins.is_trusted_now(os.fsdecode(path))
