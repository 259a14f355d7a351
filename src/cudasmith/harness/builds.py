"""Builds: those a solution leaves to its first call, and building a solution ahead of its judging.

A build is a build wherever it happens. A build at import is part of loading the solution, and one in ModelNew's constructor has the load
allowance of its own (correctness.construct). A solution may also build lazily, inside forward or a
helper it calls (`load_inline` on the first call, say): then the first call gets the load allowance on
top of its own limit rather than the call limit alone, and is never timed (timing warms up first). The
source says whether it builds lazily: a call of a build function inside a function other than the
constructor. Triton's JIT compiles on the first call too, in seconds: the first call's extra covers it.
Building ahead (exec/prebuild.py) imports the solution in a worker without a GPU, so that its judged
worker finds what it compiles in the build cache.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING

from cudasmith.harness.walls.process import WorkerFailure, WorkerProcess
from cudasmith.harness.wire.messages import Failed, LoadSolution, WorkerSetup

if TYPE_CHECKING:
    from cudasmith.harness.lease import TimingLease

# Calls that build kernels, by the last part of their dotted name.
BUILD_CALLS = frozenset(
    {
        "cpp_extension.load",
        "load_inline",
        "compile_cuda",
        "compile_c",
        "RawKernel",
        "RawModule",
        "ElementwiseKernel",
        "ReductionKernel",
        "nvrtcCompileProgram",
        "Program",
    }
)
# Functions whose builds are not the first call's: the constructor has the load allowance already.
CONSTRUCTORS = frozenset({"__init__"})


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        # cpp_extension.load builds; other loads (json.load, torch.load) do not.
        if node.attr == "load" and isinstance(node.value, ast.Name | ast.Attribute):
            return "cpp_extension.load" if _name(node.value) == "cpp_extension" else None
        return node.attr
    return None


def lazy_build(source: str) -> str | None:
    """The first build call inside a function other than the constructor ('load_inline in forward'), or
    None when the solution builds only at import or in its constructor (or does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) or function.name in CONSTRUCTORS:
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Call) and (name := _name(node.func)) in BUILD_CALLS:
                return f"{name} in {function.name}"
    return None


def build_ahead(
    problem_file: Path,
    solution: Path,
    env: dict[str, str],
    timeout_s: float,
    lease: TimingLease | None = None,
) -> tuple[bool, str]:
    """Import a solution in a sandboxed candidate worker on the CPU (supervisor, memory limit, no network,
    the audit hook; `env` says which GPU to build for), so that what its import compiles lands in the
    build cache for its judged worker: whether it went, and why not. The worker loads the problem from
    `problem_file` itself; this process need not (a candidate worker compares nothing, so it is told no
    tolerance). `lease`: the CPU's, where the candidates are judged on the CPU: the build is a worker of it,
    started as a step and paused, compiler and all, by every timing hold (its time limit waits meanwhile),
    since on the CPU a build is work beside the window."""
    setup = WorkerSetup("candidate", str(problem_file), "cpu", True)
    worker = (
        WorkerProcess(setup, env=env)
        if lease is None
        else lease.started(lambda: WorkerProcess(setup, env=env))
    )
    try:
        request = LoadSolution(str(solution.resolve()), "all")
        reply = worker.request(request, timeout_s, "building the solution ahead")
    except WorkerFailure as failure:
        return False, failure.reason
    finally:
        worker.close()
    return (False, reply.reason) if isinstance(reply, Failed) else (True, "")
