"""What candidate kernels call: fast CUDA compilation (NVRTC) and launch, and C functions on the CPU.

    from cudasmith.runtime import compile_cuda
    add = compile_cuda(SOURCE, "add")           # cached; well under a second when not
    add(x, y, out, n, grid=(n + 255) // 256, block=256)

Tensors become pointers; scalars are typed from the kernel's own parameter list.
"""

from cudasmith.runtime.cpu import CFunction, compile_c
from cudasmith.runtime.cuda import CudaKernel, compile_cuda

__all__ = ["CFunction", "CudaKernel", "compile_c", "compile_cuda"]
