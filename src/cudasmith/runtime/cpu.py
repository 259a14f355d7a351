"""C and C++ functions compiled with the system compiler and called with tensor data pointers.

This is the CPU twin of the CUDA runtime: the same calling convention (tensors become pointers, scalars
are typed from the function's signature), so the whole pipeline runs and is tested without a GPU.
"""

from __future__ import annotations

import ctypes
import os
import platform
import shutil
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from cudasmith.errors import CompileError, CudasmithError
from cudasmith.hardware import cpu_name
from cudasmith.runtime.args import pack_arguments
from cudasmith.runtime.cache import artifact_trusted, cache_dir, content_key, seal_artifact, write_atomically
from cudasmith.runtime.signature import Param, parse_signature

# OpenMP is on so that kernels can use every core with a pragma; -march=native because the
# library is built on the machine that runs it (the cache key names the CPU).
DEFAULT_FLAGS = ("-O3", "-march=native", "-fPIC", "-shared", "-fopenmp")
LANGUAGES = {"c": ("CC", "gcc", "-std=c11", ".c"), "c++": ("CXX", "g++", "-std=c++17", ".cpp")}
COMPILE_TIMEOUT_S = 120


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
class CFunction:
    """A compiled C function; call it with tensors (CPU) and scalars in the order of its parameters."""

    name: str
    library_path: Path
    params: list[Param] | None
    log: str = ""
    compile_seconds: float = 0.0
    from_cache: bool = False

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


_compiled: dict[str, CFunction] = {}
_compiled_lock = threading.Lock()


def compile_c(source: str, name: str, *, language: str = "c", flags: Sequence[str] = ()) -> CFunction:
    """Compile `source` into a shared library and return its function `name`; cached by content."""
    if language not in LANGUAGES:
        raise CudasmithError(f"language must be one of {sorted(LANGUAGES)}, not {language!r}")
    compiler, version = _compiler(language)
    all_flags = [*DEFAULT_FLAGS, LANGUAGES[language][2], *flags]
    key = content_key(source, name, language, "\0".join(all_flags), version, platform.machine(), cpu_name())
    with _compiled_lock:
        if key in _compiled:
            return _compiled[key]
    params = parse_signature(source, name)
    started = time.perf_counter()
    directory = cache_dir("cpu")
    library_path = directory / f"{key}.so"
    log, from_cache = "", library_path.is_file() and artifact_trusted(key, library_path)
    if not from_cache:
        source_path = directory / f"{key}{LANGUAGES[language][3]}"
        write_atomically(source_path, source.encode())
        build_path = directory / f"{key}.{os.getpid()}.so"
        try:
            result = subprocess.run(
                [compiler, *all_flags, str(source_path), "-o", str(build_path)],
                capture_output=True,
                text=True,
                timeout=COMPILE_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise CompileError(f"{Path(compiler).name} took longer than {COMPILE_TIMEOUT_S} s") from None
        log = (result.stderr + result.stdout).replace(str(source_path), "kernel" + LANGUAGES[language][3])
        if result.returncode != 0:
            build_path.unlink(missing_ok=True)
            raise CompileError.from_log(Path(compiler).name, log)
        os.replace(build_path, library_path)
        seal_artifact(key, library_path)
    function = CFunction(name, library_path, params, log, time.perf_counter() - started, from_cache)
    with _compiled_lock:
        _compiled[key] = function
    return function
