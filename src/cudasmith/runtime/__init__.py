"""What candidate kernels call: fast CUDA compilation (NVRTC) and launch, and C functions on the CPU.

    from cudasmith.runtime import compile_cuda
    add = compile_cuda(SOURCE, "add")           # cached; well under a second when not
    add(x, y, out, n, grid=(n + 255) // 256, block=256)

Tensors become pointers; scalars are typed from the kernel's own parameter list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cudasmith.lazy import lazy_exports

if TYPE_CHECKING:
    from cudasmith.runtime.cpu import CFunction, compile_c
    from cudasmith.runtime.cuda import CudaKernel, compile_cuda

__all__ = ["CFunction", "CudaKernel", "compile_c", "compile_cuda"]
# Loaded when first asked for: a process that only reads a GPU's target (runtime.arch) or starts workers
# imports none of torch through this package.
__getattr__ = lazy_exports(
    __name__,
    {
        "CFunction": "cudasmith.runtime.cpu",
        "compile_c": "cudasmith.runtime.cpu",
        "CudaKernel": "cudasmith.runtime.cuda",
        "compile_cuda": "cudasmith.runtime.cuda",
    },
)
