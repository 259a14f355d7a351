"""A GPU's compile target: the NVRTC target (sm_90a) that kernels and extensions are built for, from torch,
from the CUDA driver, or as the user names it. Nothing here imports torch at module level: a process that
sends builds ahead reads its target before it imports torch (exec/prebuild.py)."""

from __future__ import annotations

import os

from cudasmith.errors import NoGpuError

# Compile for this target instead of the current GPU's (e.g. sm_90a): cross-compiling, or CI without a GPU.
ARCH_ENV = "CUDASMITH_CUDA_ARCH"
# What the CUDA driver calls a GPU's compute capability.
CAPABILITY_ATTRIBUTES = {
    "major": "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR",
    "minor": "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR",
}


def device_arch(device: int | None = None) -> str:
    """The NVRTC target of a GPU: sm_XY, with the 'a' suffix (wgmma, setmaxnreg…) from Hopper on."""
    import torch

    if os.environ.get(ARCH_ENV):
        return os.environ[ARCH_ENV]
    if not torch.cuda.is_available():
        raise NoGpuError(
            f"no CUDA GPU is visible; pass arch='sm_90a' (or set {ARCH_ENV}) to compile without one"
        )
    return arch_name(*torch.cuda.get_device_capability(device))


def arch_name(major: int, minor: int) -> str:
    """The NVRTC target of compute capability major.minor (9, 0: sm_90a)."""
    return f"sm_{major}{minor}{'a' if major >= 9 else ''}"


def torch_arch_list(arch: str) -> str:
    """TORCH_CUDA_ARCH_LIST for an NVRTC target (sm_90a: 9.0), where the user set none: the user's own
    otherwise. A build made without the GPU (a build worker) and one made beside it (the judged worker)
    must use the same flags, or torch's build system builds again: on the H100 a user's `9.0a` against
    a build worker's `9.0` built every load_inline solution twice."""
    if os.environ.get("TORCH_CUDA_ARCH_LIST"):
        return os.environ["TORCH_CUDA_ARCH_LIST"]
    digits = "".join(ch for ch in arch.removeprefix("sm_") if ch.isdigit())
    return f"{digits[:-1]}.{digits[-1]}"


def gpu_target(index: int) -> str:
    """GPU `index`'s NVRTC target (sm_90a), as the CUDA driver tells it where it can, so that a process
    sends its builds ahead before it imports torch (seconds); torch's answer where the driver gives none."""
    from cudasmith.hardware import driver_attributes

    if os.environ.get(ARCH_ENV):
        return os.environ[ARCH_ENV]
    capability = driver_attributes(index, CAPABILITY_ATTRIBUTES)
    if len(capability) == len(CAPABILITY_ATTRIBUTES):
        return arch_name(capability["major"], capability["minor"])
    return device_arch(index)
