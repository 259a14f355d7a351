"""The candidate's filesystem: it reads what it needs and writes only into its own scratch folder.

A policy (what may be read, what may be written) is made by the parent and applied by the supervisor in
the worker's process between fork and exec, so the worker runs confined from its first instruction and
every thread it ever has inherits the confinement. Two mechanisms, the first that works is used:

- **Landlock** (Linux 5.13+, unprivileged, no namespaces): a ruleset that allows reading, executing and
  listing below the read roots and everything below the write roots; any other path is refused with
  EACCES, whatever the process's credentials. It also stops the candidate from reading other processes'
  /proc entries (environment, memory, working directory) and, from ABI 6, from signalling the judge.
  Set-up is a few system calls: well under a millisecond.
- **A user and mount namespace** (where Landlock is missing): every mount is made read-only, the write
  roots are bind-mounted read-write, and what must stay unread ($HOME's dotfiles, the run store's and
  the cache's folders, the judge's key) is covered by empty mounts. Writes elsewhere fail with EROFS.

Under both, the worker writes its own /proc entry and no other: CUDA's cuInit names the driver's threads
in /proc/self/task/<tid>/comm and fails (error 304) where it cannot.

The policy is whole when the worker starts, worked out in the parent down to /proc's entries: nothing is
narrowed later. Landlock binds a thread, and those it starts afterwards; a worker narrowed once its
solution was known would keep the wider rules on every thread it already had (OpenMP's team, the CUDA
driver's), where a solution's parallel C code runs. So a worker writes its scratch folder, its own folder
of shared memory and one build folder, an empty slot the parent made for it (scratch.py), which the parent
renames into the place of its solution's build folder once it knows the solution: Landlock's rules follow
a folder's inode, not its name. Where a mechanism works here, a worker that cannot be confined does not
run (REQUIRED_ENV); the candidate gets an infrastructure error.

Landlock is preferred: it restricts reads by path (the namespace hides only the paths it was told of),
needs no privileges and no namespaces (which containers and hardened hosts often forbid), and costs less.

    python -m cudasmith.harness.walls.sandbox     # which mechanisms work here, what each costs, whether CUDA starts
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from cudasmith.harness.walls.confinement import (
    SHARED_MEMORY,
    Policy,
    apply_landlock,
    apply_namespace,
    drop_capabilities,
    landlock_abi,
    machine_proc,
)

# The environment variable that carries a worker's policy (JSON) to its supervisor.
POLICY_ENV = "CUDASMITH_SANDBOX"
# What the worker was confined by, as the supervisor set it.
STATE_ENV = "CUDASMITH_SANDBOX_STATE"
# Set by the parent where a mechanism works here (unavailable() is None): a worker that cannot be confined
# by one then does not run at all, rather than unconfined.
REQUIRED_ENV = "CUDASMITH_SANDBOX_REQUIRED"
# The mechanisms to try, in order, comma-separated (default: MECHANISMS); for tests and diagnosis. NO_SANDBOX
# there (set by whoever runs the judge, never a candidate) runs workers unconfined, as no mechanism were here.
MECHANISMS_ENV = "CUDASMITH_SANDBOX_MECHANISMS"
NO_SANDBOX = "none"
NOT_ISOLATED = "filesystem not isolated"
# System folders a worker reads: the interpreter's and the toolkits' libraries, configuration, devices (and
# /proc's entries of the machine, machine_proc, never another process's).
SYSTEM_READ = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/opt", "/sys")


def python_roots() -> set[str]:
    """Where the interpreter, its libraries and cudasmith live (the import path, less the working folder)."""
    paths = sysconfig.get_paths()
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(sys.executable).resolve().parent)}
    roots |= {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    roots.add(str(Path(__file__).resolve().parents[2]))  # cudasmith's own source, installed or not
    working = os.path.realpath(os.getcwd())
    # The worker's import path: this process's, and PYTHONPATH as the worker will have it.
    entries = [*sys.path, *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    roots |= {e for e in entries if e and os.path.isdir(e) and os.path.realpath(e) != working}
    return roots


def toolkit_roots() -> set[str]:
    """The CUDA toolkit's and the compilers' folders, wherever they are installed."""
    roots = {os.environ[name] for name in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(name)}
    for tool in ("nvcc", "gcc", "cc", "g++"):
        if found := shutil.which(tool):
            roots.add(str(Path(found).resolve().parent.parent))
    return roots


def _below(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def make_policy(
    scratch: Path,
    problem: Path,
    hide: tuple[Path, ...],
    extra_read: tuple[Path, ...] = (),
    shared_memory: Path | None = None,
) -> Policy:
    """The policy of a candidate's worker: Python, the toolkits, the system, the problem and `extra_read`
    to read; its scratch folder and its own folder of shared memory (`shared_memory`, by default all of it)
    to write. `hide`: folders that must stay unread even where a read root holds them (the store's, the
    cache's measurements, the key's). Worked out here, in the parent, down to /proc's entries: a confined
    process cannot list /proc."""
    hidden = {os.path.realpath(p) for p in hide}
    home = Path.home()
    dotfiles = {str(p) for p in home.glob(".*")} if home.is_dir() else set()
    candidates = {*SYSTEM_READ, *python_roots(), *toolkit_roots(), str(problem), *map(str, extra_read)}
    read = (
        sorted(
            p
            for p in {os.path.realpath(c) for c in candidates if os.path.exists(c)}
            if not any(_below(p, h) for h in hidden)
        )
        + machine_proc()
    )
    # The namespace covers dotfiles too, except those that hold something to read (a venv in ~/.venv).
    covered = {p for p in dotfiles if not any(_below(r, os.path.realpath(p)) for r in read)}
    write = (str(scratch), str(shared_memory or SHARED_MEMORY))
    return Policy(str(scratch), tuple(read), write, tuple(sorted(hidden | covered)))


MECHANISMS = ("landlock", "namespace")


def confine(policy: Policy, mechanisms: tuple[str, ...] | None = None) -> str:
    """Apply the first mechanism that works (of `mechanisms`, by default $CUDASMITH_SANDBOX_MECHANISMS or
    MECHANISMS); returns its name, or why none did ("filesystem not isolated (…)"). Runs between fork and
    exec (single-threaded), so a failure must not raise."""
    if mechanisms is None:
        mechanisms = tuple(os.environ.get(MECHANISMS_ENV, ",".join(MECHANISMS)).split(","))
    reasons = []
    for mechanism in mechanisms:
        try:
            if mechanism == "landlock":
                abi = landlock_abi()
                if abi < 1:
                    reasons.append("no Landlock in this kernel")
                    continue
                state = apply_landlock(policy, abi)
            elif mechanism == "namespace":
                state = apply_namespace(policy)
            elif mechanism == NO_SANDBOX:
                reasons.append(f"{MECHANISMS_ENV}={NO_SANDBOX}")
                continue
            else:
                reasons.append(f"no mechanism {mechanism!r}")
                continue
            drop_capabilities()  # what a root worker could undo its confinement with
            return state
        except OSError as exc:
            reasons.append(f"{mechanism}: {exc.strerror or exc}")
    return f"{NOT_ISOLATED} ({'; '.join(reasons)})"


def isolated(state: str | None) -> bool:
    """Whether a worker's reported filesystem state is a working mechanism."""
    return bool(state) and not str(state).startswith(NOT_ISOLATED)


def unavailable() -> str | None:
    """Why no mechanism can confine a worker here, or None where one can (tried in a forked child)."""
    if landlock_abi() >= 1:
        return None
    with tempfile.TemporaryDirectory(prefix="cudasmith-probe-") as scratch:
        state, _ = setup_cost("namespace", Policy(scratch, (), (scratch,), ()))
    return None if isolated(state) else state


def setup_cost(mechanism: str, policy: Policy) -> tuple[str, float]:
    """What one mechanism gives in a forked child, and how long it took there (ms)."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        started = time.perf_counter()
        state = confine(policy, (mechanism,))
        os.write(write_end, json.dumps([state, (time.perf_counter() - started) * 1e3]).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        state, elapsed_ms = json.loads(pipe.read())
    os.waitpid(child, 0)
    return state, elapsed_ms


# What every GPU worker does first, in a fresh process that confines itself (single-threaded, as the
# supervisor's child is): it prints the mechanism's state, then what cuInit returns.
CUDA_PROBE = """
import ctypes, sys
from cudasmith.harness.walls.sandbox import Policy, confine
print(confine(Policy.from_json(sys.argv[1]), (sys.argv[2],)), flush=True)
print(ctypes.CDLL("libcuda.so.1").cuInit(0))
"""
# cuInit's result where CUDA started; 304 (CUDA_ERROR_OPERATING_SYSTEM) is what a policy refusing the
# driver something gives.
CUDA_SUCCESS = "0"
CUDA_PROBE_TIMEOUT_S = 120


def cuda_start(mechanism: str, policy: Policy) -> tuple[str, str]:
    """(the mechanism's state, what cuInit returned) in a fresh process confined by it; the second is
    CUDA_SUCCESS where CUDA starts, or why it could not be asked (no driver here)."""
    result = subprocess.run(
        [sys.executable, "-c", CUDA_PROBE, policy.to_json(), mechanism],
        capture_output=True, text=True, timeout=CUDA_PROBE_TIMEOUT_S, check=False,
    )  # fmt: skip
    lines = result.stdout.splitlines()
    why = (result.stderr.strip().splitlines() or ["no output"])[-1]
    return (lines[0] if lines else why), (lines[1] if len(lines) > 1 else why)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="cudasmith-scratch-") as scratch:
        policy = make_policy(Path(scratch), Path(__file__), ())
        print(f"{'mechanism':<12} {'result':<24} {'set-up (ms, median of 20)':<27} cuInit (0: CUDA starts)")
        for mechanism in MECHANISMS:
            runs = [setup_cost(mechanism, policy) for _ in range(20)]
            times = sorted(ms for _, ms in runs)
            cuda = cuda_start(mechanism, policy)[1]
            print(f"{mechanism:<12} {runs[0][0]:<24} {times[len(times) // 2]:<27.2f} {cuda}")


if __name__ == "__main__":
    main()
