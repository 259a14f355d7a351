"""What candidate kernels call: fast CUDA compilation (NVRTC) and launch, and C functions on the CPU.

    from cudasmith.runtime import compile_cuda
    add = compile_cuda(SOURCE, "add")           # cached; well under a second when not
    add(x, y, out, n, grid=(n + 255) // 256, block=256)

Tensors become pointers; scalars are typed from the kernel's own parameter list.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cudasmith.runtime.cpu import CFunction, compile_c
    from cudasmith.runtime.cuda import CudaKernel, compile_cuda

__all__ = ["CFunction", "CudaKernel", "compile_c", "compile_cuda"]
_HOMES = {"CFunction": "cpu", "compile_c": "cpu", "CudaKernel": "cuda", "compile_cuda": "cuda"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
