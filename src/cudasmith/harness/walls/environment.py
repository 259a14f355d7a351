"""What a worker process starts with: the interpreter's flags, its environment (no credentials, the worker's
token, its GPU), and the sweep that kills whatever carries a finished worker's token."""

from __future__ import annotations

import contextlib
import os
import re
import signal
from pathlib import Path

from cudasmith.errors import UsageError
from cudasmith.harness.walls.supervisor import PARENT_ENV
from cudasmith.runtime import seal
from cudasmith.runtime.cache import cache_root

# The judge's processes import only trusted code: -P keeps the working directory (where a candidate may
# have left a `numpy.py`) off sys.path, -s keeps the user's site-packages (writable by any candidate) off it.
TRUSTED_PATH_FLAGS = ("-P", "-s")
# The environment variable marking every process started for one worker.
TOKEN_ENV = "CUDASMITH_WORKER_TOKEN"
# The byte glibc writes into freed and newly allocated heap memory of candidate workers.
MALLOC_PERTURB_BYTE = 0xA5
# Environment variables that look like credentials never reach candidate code.
SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.I)


def visible_gpu(gpu_index: int, visible: str | None) -> str:
    """What CUDA_VISIBLE_DEVICES makes a child see only this process's cuda:`gpu_index`: the index into
    this process's own CUDA_VISIBLE_DEVICES where it has one (a Ray worker or a user's `2,3`)."""
    if not visible or not visible.strip():
        return str(gpu_index)
    entries = [entry.strip() for entry in visible.split(",") if entry.strip()]
    if gpu_index >= len(entries):
        raise UsageError(f"cuda:{gpu_index} is not visible here (CUDA_VISIBLE_DEVICES={visible})")
    return entries[gpu_index]


def worker_env(
    token: str, role: str, defences: bool, gpu_index: int | None, extra: dict[str, str] | None = None
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not SECRET_ENV.search(k)}
    # Where the judge's key is (not the key): the reference worker seals what it compiles with it.
    if seal.KEY_ENV in os.environ:
        env[seal.KEY_ENV] = os.environ[seal.KEY_ENV]
    env["CUDASMITH_WORKER"] = role
    # The CUDA driver caches the machine code it makes of PTX in $HOME/.nv unless told otherwise: the judge's
    # own workers keep it in cudasmith's cache instead (a candidate's worker keeps its own in its scratch).
    env.setdefault("CUDA_CACHE_PATH", str(cache_root() / "nv"))
    if gpu_index is not None:  # the worker sees that one GPU, as cuda:0
        env["CUDA_VISIBLE_DEVICES"] = visible_gpu(gpu_index, os.environ.get("CUDA_VISIBLE_DEVICES"))
    env.update(extra or {})
    # Every process the worker starts inherits this; a sweep kills whatever carries it at the end.
    env[TOKEN_ENV] = token
    env[PARENT_ENV] = str(os.getpid())  # the supervisor's check that this process still lives
    if role == "candidate" and defences:
        # glibc fills freed and fresh heap memory with this byte: no stale values from earlier calls.
        env["MALLOC_PERTURB_"] = str(MALLOC_PERTURB_BYTE)
    # The worker imports cudasmith from wherever this process did (an uninstalled checkout included).
    package_root = str(Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    return env


def sweep(token: str) -> int:
    """Kill every process whose environment carries `token`; returns how many were found."""
    needle = f"{TOKEN_ENV}={token}".encode()
    found = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry.name}/environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)
                found += 1
    return found


def default_memory_limit() -> int:
    """Half of the machine's memory: a worker over it is killed before it can starve the host."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
