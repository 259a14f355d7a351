"""Telling a solution that cannot run on the CPU from one that fails there.

A CUDA solution judged on the CPU fails when it loads: cudasmith's runtime finds no GPU to compile for,
PyTorch has no CUDA, `load_inline` finds no CUDA toolkit, Triton finds no driver. Its author needs to hear
which device to ask for, not how to cross-compile.
"""

from __future__ import annotations

from cudasmith.errors import NoGpuError

# What PyTorch, its extension builder and Triton say when the process has no GPU to run CUDA code on.
NO_GPU_MESSAGES = (
    "Torch not compiled with CUDA enabled",
    "Found no NVIDIA driver",
    "No CUDA GPUs are available",
    "CUDA_HOME environment variable is not set",
    "0 active drivers",
)
NEEDS_CUDA = "a CUDA solution needs --device cuda"
# What of the original error a reason keeps.
MESSAGE_CHARS = 200


def needs_gpu(exc: BaseException) -> bool:
    """True when `exc` (or what it chains from) says there is no GPU for CUDA code."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        error = pending.pop()
        if error is None or id(error) in seen:
            continue
        seen.add(id(error))
        if isinstance(error, NoGpuError) or any(text in str(error) for text in NO_GPU_MESSAGES):
            return True
        pending += [error.__cause__, error.__context__]
    return False


def cuda_on_cpu(exc: BaseException) -> str:
    """The reason for a CUDA solution that failed to load on the CPU: the device to ask for, and what
    failed unless it was only cudasmith's runtime finding no GPU."""
    if isinstance(exc, NoGpuError):
        return f"{NEEDS_CUDA} (it compiles its kernels for the GPU it runs on; this run is on the CPU)"
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"{NEEDS_CUDA} (on the CPU: {message[:MESSAGE_CHARS]})"
