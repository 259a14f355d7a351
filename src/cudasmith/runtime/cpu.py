"""C and C++ functions compiled with the system compiler and called with tensor data pointers.

This is the CPU twin of the CUDA runtime: the same calling convention (tensors become pointers, scalars
are typed from the function's signature), so the whole pipeline runs and is tested without a GPU.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import platform
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from cudasmith.errors import CompileError, CudasmithError, ForbiddenBuild
from cudasmith.hardware import cpu_name
from cudasmith.runtime.args import pack_arguments
from cudasmith.runtime.cache import artifact_trusted, cache_dir, content_key, seal_artifact, write_atomically
from cudasmith.runtime.compiled import Compiled, ProcessCache
from cudasmith.runtime.signature import parse_signature

# OpenMP is on so that kernels can use every core with a pragma; -march=native because the
# library is built on the machine that runs it (the cache key names the CPU).
DEFAULT_FLAGS = ("-O3", "-march=native", "-fPIC", "-shared", "-fopenmp")
LANGUAGES = {"c": ("CC", "gcc", "-std=c11", ".c"), "c++": ("CXX", "g++", "-std=c++17", ".cpp")}
COMPILE_TIMEOUT_S = 120
# PyTorch's own libraries named in a flag (-ltorch_cpu, -l:libc10.so, a path to libtorch_cuda.so): a kernel
# linked against them could call ATen's kernels below the dispatcher, unrecorded, as if they were its own.
TORCH_LIBRARY = re.compile(r"(-l:?|lib)(torch|c10)\w*")
# Sealed: no process, this one included, may write, grow or shrink the file again.
SEALS = fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL


@cache
def _compiler(language: str) -> tuple[str, str]:
    """The compiler's path and its version line (part of the cache key)."""
    env_var, default, _, _ = LANGUAGES[language]
    compiler = shutil.which(os.environ.get(env_var, default))
    if compiler is None:
        raise CudasmithError(f"no {language} compiler found (looked for ${env_var} or {default})")
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=False).stdout
    return compiler, (version.splitlines() or [""])[0]


@dataclass
class CFunction(Compiled):
    """A compiled C function; call it with tensors (CPU) and scalars in the order of its parameters."""

    library_path: Path

    def __post_init__(self) -> None:
        library = ctypes.CDLL(str(self.library_path))
        try:
            self._function = getattr(library, self.name)
        except AttributeError:
            raise CompileError(
                f'no exported function named {self.name!r} (C++ needs extern "C")', log=self.log
            ) from None
        self._function.restype = None
        self._library = library

    def __call__(self, *args: Any) -> None:
        """Call the function; it returns nothing (results are written through pointers)."""
        self._function(*pack_arguments(self.params, args, "cpu", f"function {self.name}"))


_compiled: ProcessCache[CFunction] = ProcessCache()


def compile_c(
    source: str, name: str, *, language: str = "c", flags: Sequence[str] = (), disk_cache: bool = True
) -> CFunction:
    """Compile `source` into a shared library and return its function `name`; cached by content.
    `disk_cache=False` builds it in sealed memory, never read from or written to the cache on disk (for
    code that must be what was compiled, whoever can write the cache: the judge's own helpers)."""
    if language not in LANGUAGES:
        raise CudasmithError(f"language must be one of {sorted(LANGUAGES)}, not {language!r}")
    if linked := next((flag for flag in flags if TORCH_LIBRARY.search(flag)), None):
        raise ForbiddenBuild(
            f"linking PyTorch's libraries ({linked}) is refused: ATen's kernels called from C would count as "
            "the solution's own"
        )
    compiler, version = _compiler(language)
    all_flags = [*DEFAULT_FLAGS, LANGUAGES[language][2], *flags]
    key = content_key(source, name, language, "\0".join(all_flags), version, platform.machine(), cpu_name())
    key = _compiled.key(key, disk_cache)
    if (function := _compiled.get(key)) is not None:
        return function
    params = parse_signature(source, name)
    started = time.perf_counter()
    if not disk_cache:
        library, log = _build_in_memory(compiler, all_flags, language, source, name)
        seconds = time.perf_counter() - started
        function = CFunction(library, name=name, params=params, log=log, compile_seconds=seconds)
        return _compiled.add(key, function)
    directory = cache_dir("cpu")
    with _building(key):  # one build of a key at a time in this process; other processes may race
        if (function := _compiled.get(key)) is not None:
            return function
        library_path = directory / f"{key}.so"
        log, from_cache = "", library_path.is_file() and artifact_trusted(key, library_path)
        if not from_cache:
            source_path = directory / f"{key}{LANGUAGES[language][3]}"
            write_atomically(source_path, source.encode())
            build_path = directory / f"{key}.{os.getpid()}.{threading.get_ident()}.so"
            command = [compiler, *all_flags, str(source_path), "-o", str(build_path)]
            try:
                log = _run(command, shown={str(source_path): "kernel" + LANGUAGES[language][3]})
            except CompileError:
                build_path.unlink(missing_ok=True)
                raise
            library_path = _publish(key, build_path, library_path)
        seconds = time.perf_counter() - started
        function = CFunction(
            library_path, name=name, params=params, log=log, compile_seconds=seconds, from_cache=from_cache
        )
        return _compiled.add(key, function)


_build_locks: dict[str, threading.Lock] = {}


@contextmanager
def _building(key: str) -> Iterator[None]:
    with _compiled.lock:
        lock = _build_locks.setdefault(key, threading.Lock())
    with lock:
        yield


def _publish(key: str, built: Path, library: Path) -> Path:
    """Put a fresh build in the cache under its key, never over a library already there: another
    process may have that one mapped, and replacing it would leave the process running a deleted file
    (which the judge cannot read back). When one is there already (another process built the same key at
    the same time, or a stale one failed its check), the fresh build is used from its own name."""
    try:
        os.link(built, library)
    except FileExistsError:
        return built
    except OSError:  # a filesystem without hard links: the old way, replacing
        os.replace(built, library)
    built.unlink(missing_ok=True)
    seal_artifact(key, library)
    return library


def _run(
    command: list[str],
    stdin: bytes | None = None,
    descriptors: tuple[int, ...] = (),
    shown: dict[str, str] | None = None,
) -> str:
    """Run the compiler with `descriptors` inherited; its log (each key of `shown` in it replaced by its
    value: a cache path by the name the kernel's author knows), or a CompileError."""
    try:
        result = subprocess.run(
            command,
            input=stdin,
            capture_output=True,
            pass_fds=descriptors,
            timeout=COMPILE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CompileError(f"{Path(command[0]).name} took longer than {COMPILE_TIMEOUT_S} s") from None
    log = (result.stderr + result.stdout).decode(errors="replace")
    for path, name in (shown or {}).items():
        log = log.replace(path, name)
    if result.returncode != 0:
        raise CompileError.from_log(Path(command[0]).name, log)
    return log


def _build_in_memory(
    compiler: str, flags: list[str], language: str, source: str, name: str
) -> tuple[Path, str]:
    """Compile and link into sealed memory files: no file of the build is ever on disk where another
    process could change it (-pipe keeps the assembly in pipes; the object and the library are memfds)."""
    compile_flags = [flag for flag in flags if flag != "-shared"]
    link_flags = [flag for flag in flags if flag in ("-shared", "-fopenmp") or flag.startswith(("-l", "-L"))]
    objects = os.memfd_create(f"{name}.o", os.MFD_ALLOW_SEALING)
    library = os.memfd_create(f"{name}.so", os.MFD_ALLOW_SEALING)
    try:
        compile_command = [compiler, *compile_flags, "-pipe", "-c", "-x", language, "-"]
        log = _run([*compile_command, "-o", f"/proc/self/fd/{objects}"], source.encode(), (objects,))
        fcntl.fcntl(objects, fcntl.F_ADD_SEALS, SEALS)
        link_command = [compiler, *link_flags, f"/proc/self/fd/{objects}"]
        log += _run([*link_command, "-o", f"/proc/self/fd/{library}"], b"", (objects, library))
        fcntl.fcntl(library, fcntl.F_ADD_SEALS, SEALS)
    except BaseException:
        os.close(library)
        raise
    finally:
        os.close(objects)
    # The descriptor stays open for the life of the process: the library is loaded through it.
    return Path(f"/proc/self/fd/{library}"), log
