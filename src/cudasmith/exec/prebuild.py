"""Building ahead: a candidate's kernels compiled on the host's CPUs while the GPUs judge others.

A build imports the solution in a worker of its own, sandboxed like a judged candidate (supervisor,
no network, its files confined, memory limit, the audit hook) but with no GPU visible and told which GPU
to build for. What its import compiles (NVRTC cubins, C libraries, torch extensions, Triton) lands in the
solution's own folder of the build cache (`runtime.cache.extension_root`), the only place in the cache it
may write; the parent seals the folder afterwards (harness/walls/scratch.py). The judged worker then finds them
there, checked, instead of compiling with a GPU held idle.

A build never decides anything: whatever it says, the candidate is judged as usual, and a build that
failed (an import that needs the GPU, a compile error) just means the judged worker compiles, or fails,
itself.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from cudasmith.errors import UsageError
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
# Cores left to the lanes' own workers (launching, timing, comparing) before any goes to builds.
CORES_PER_LANE = 2
MAX_BUILD_WORKERS = 8


@dataclass(frozen=True)
class BuildResult:
    """How building one candidate ahead went."""

    ok: bool
    seconds: float
    reason: str = ""


def default_build_workers(lanes: int) -> int:
    """Build workers: the cores the lanes leave, at most MAX_BUILD_WORKERS, at least one."""
    spare = (os.cpu_count() or 2) - CORES_PER_LANE * lanes
    return max(1, min(MAX_BUILD_WORKERS, spare))


def build_target(devices: list[str]) -> str | None:
    """The NVRTC target builds are made for: the lanes' GPUs' (None on the CPU); mixed GPUs build
    nothing ahead, since one build would serve only some lanes."""
    if devices[0] == "cpu":
        return None
    from cudasmith.runtime.arch import gpu_target

    targets = {gpu_target(int(d.partition(":")[2] or 0)) for d in devices}
    if len(targets) != 1:
        raise UsageError(f"the GPUs differ ({', '.join(sorted(targets))}); give --gpus of one kind")
    return targets.pop()


def device_before_torch(device: str | None) -> str | None:
    """The device a command's judge will use, as known before torch is imported: the one named; else
    'cuda' where the CUDA driver sees a GPU, 'cpu' where it sees none; None where only torch can tell
    (no cuda-python). A guess: builds sent for it are checked against the device the judge resolves
    (BuildsAhead.serves)."""
    if device is not None:
        return device
    from cudasmith.hardware import driver_gpu_count

    count = driver_gpu_count()
    return None if count is None else "cuda" if count else "cpu"


def needs_build(source: str) -> bool:
    """Whether importing this solution may compile kernels (and so is worth building ahead)."""
    return any(marker in source for marker in BUILD_MARKERS)


def slow_build(source: str) -> bool:
    """Whether importing this solution may build a torch extension (tens of seconds)."""
    return any(marker in source for marker in SLOW_BUILD_MARKERS)


def build_environment(target: str | None, head_start: bool = False) -> dict[str, str]:
    """A build worker's variables: no GPU, the GPU target the judged worker will compile for, and for a
    build that is only a head start, the niceness that leaves the CPU to the judged workers first."""
    from cudasmith.harness.walls.supervisor import NICE_ENV
    from cudasmith.runtime.arch import ARCH_ENV, torch_arch_list

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
    from cudasmith.harness.lease import lease_for

    started = time.monotonic()
    # The problem's file, not the problem: loading it here would import torch before the worker starts.
    problem_file = job.problem.file(scratch)
    env = build_environment(target, head_start=not slow_build(job.source))
    # Candidates judged on the CPU (no GPU target): the build shares their device, and gives way to timing.
    lease = lease_for("cpu") if target is None else None
    ok, reason = build_ahead(problem_file, job.solution_file(scratch), env, timeout_s, lease)
    return BuildResult(ok, round(time.monotonic() - started, 3), reason)
