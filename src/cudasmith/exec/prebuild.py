"""Building ahead: a candidate's kernels compiled on the host's CPUs while the GPUs judge others.

A build imports the solution in a worker of its own, sandboxed like a judged candidate (supervisor,
no network, its files confined, memory limit, the audit hook) but with no GPU visible and told which GPU
to build for. What its import compiles (NVRTC cubins, C libraries, torch extensions, Triton) lands in the
solution's own folder of the build cache (`runtime.cache.extension_root`), the only place in the cache it
may write; the parent seals the folder afterwards (harness/scratch.py). The judged worker then finds them
there, checked, instead of compiling with a GPU held idle.

A build never decides anything: whatever it says, the candidate is judged as usual, and a build that
failed (an import that needs the GPU, a compile error) just means the judged worker compiles, or fails,
itself.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from cudasmith.exec.jobs import Job

# What a solution's source says when its import may compile something worth building ahead.
BUILD_MARKERS = ("load_inline", "cpp_extension", "compile_cuda", "compile_c(", "RawKernel", "nvrtc")
# Builds a judged worker would wait on for tens of seconds: torch extensions (nvcc and the host compiler
# over PyTorch's headers, ~45 s); NVRTC and C builds take a fraction of a second.
SLOW_BUILD_MARKERS = ("load_inline", "cpp_extension")
# A build's import (nvcc on a big extension takes a minute or more).
BUILD_TIMEOUT_S = 300.0
# The niceness of a build that is only a head start (NVRTC, C: its judged worker would compile in a
# fraction of a second, and the build worker's own start costs seconds of CPU): it takes the cores the
# judged workers leave. An extension build, which its solution waits for, runs at the judge's niceness.
HEAD_START_NICE = 10


@dataclass(frozen=True)
class BuildResult:
    """How building one candidate ahead went."""

    ok: bool
    seconds: float
    reason: str = ""


def needs_build(source: str) -> bool:
    """Whether importing this solution may compile kernels (and so is worth building ahead)."""
    return any(marker in source for marker in BUILD_MARKERS)


def slow_build(source: str) -> bool:
    """Whether importing this solution may build a torch extension (tens of seconds)."""
    return any(marker in source for marker in SLOW_BUILD_MARKERS)


def build_environment(target: str | None, head_start: bool = False) -> dict[str, str]:
    """A build worker's variables: no GPU, the GPU target the judged worker will compile for, and for a
    build that is only a head start, the niceness that leaves the CPU to the judged workers first."""
    from cudasmith.harness.supervisor import NICE_ENV
    from cudasmith.runtime.cuda import ARCH_ENV, torch_arch_list

    env = {"CUDA_VISIBLE_DEVICES": ""}
    if head_start:
        env[NICE_ENV] = str(HEAD_START_NICE)
    if target:
        env[ARCH_ENV] = target
        env["TORCH_CUDA_ARCH_LIST"] = torch_arch_list(target)
    return env


def build(job: Job, scratch: Path, target: str | None, timeout_s: float = BUILD_TIMEOUT_S) -> BuildResult:
    """Import the candidate in a sandboxed CPU worker, so that what it compiles is cached for its judged
    worker. `target`: the GPU's NVRTC target (sm_90a), None when the candidates run on the CPU."""
    from cudasmith.harness.builds import build_ahead

    started = time.monotonic()
    problem = job.problem.load(scratch)
    env = build_environment(target, head_start=not slow_build(job.source))
    ok, reason = build_ahead(problem, job.solution_file(scratch), env, timeout_s)
    return BuildResult(ok, round(time.monotonic() - started, 3), reason)
