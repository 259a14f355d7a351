"""Fast run-time compilation of CUDA C++ kernels with NVRTC, launched on PyTorch's current stream.

Why NVIDIA's cuda-python low-level layer (`cuda.bindings`) and not `cuda.core` or CuPy: we need
five calls (NVRTC with name expressions, module load, function lookup, an attribute, the launch), and
they must behave the same on every install. `cuda.bindings` mirrors the C API one to one and has kept
it through CUDA 12 and 13; `cuda.core` moved from `cuda.core.experimental` to `cuda.core` and changed
its launch signature on the way; CuPy brings its own memory pool and CUDA stack and takes about a second
to import in every worker. NVRTC itself needs no GPU, so kernels compile (and compile errors show) on
machines without one; launching needs the GPU.
"""

from __future__ import annotations

import ctypes
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudasmith.errors import CompileError, CudasmithError, KernelLaunchError
from cudasmith.runtime.arch import device_arch
from cudasmith.runtime.args import pack_arguments
from cudasmith.runtime.cache import artifact_trusted, cache_dir, content_key, seal_artifact, write_atomically
from cudasmith.runtime.compiled import Compiled, ProcessCache
from cudasmith.runtime.signature import parse_signature

# Above this much dynamic shared memory a kernel must opt in through a function attribute.
DEFAULT_SHARED_MEMORY_LIMIT = 48 * 1024
# NVRTC has no <math.h> or <float.h>; kernels use these names all the time, so they are predefined.
# The #line directive keeps the compiler's line numbers those of the kernel's own source.
PRELUDE = """#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#ifndef FLT_MAX
#define FLT_MAX 3.402823466e+38f
#endif
#ifndef FLT_MIN
#define FLT_MIN 1.175494351e-38f
#endif
#line 1 "kernel.cu"
"""


def _bindings() -> tuple[Any, Any]:
    try:
        from cuda.bindings import driver, nvrtc
    except ImportError:
        raise CudasmithError(
            "cudasmith.runtime needs NVIDIA's cuda-python for CUDA kernels: pip install 'cudasmith[cuda]'"
        ) from None
    return driver, nvrtc


def _check(result: tuple[Any, ...], what: str) -> Any:
    driver, _ = _bindings()
    error = result[0]
    if int(error) != 0:
        if isinstance(error, driver.CUresult):
            _, name = driver.cuGetErrorName(error)
            raise KernelLaunchError(f"{what} failed: {name.decode() if name else error}")
        raise CudasmithError(f"{what} failed: {error}")
    return result[1] if len(result) == 2 else result[1:]


def include_dirs() -> list[str]:
    """Directories with the CUDA toolkit headers (cuda_fp16.h, cuda_bf16.h, …) for NVRTC."""
    found: list[str] = []
    try:
        from cuda.pathfinder import find_nvidia_header_directory

        directory = find_nvidia_header_directory("cudart")
        if directory:
            found.append(str(directory))
    except Exception:  # an older cuda-pathfinder, or no toolkit it can see
        pass
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "include" / "cuda_fp16.h").is_file():
            found.append(str(Path(root) / "include"))
    return list(dict.fromkeys(found))


def _nvrtc_version() -> str:
    _, nvrtc = _bindings()
    major, minor = _check(nvrtc.nvrtcVersion(), "nvrtcVersion")
    return f"{major}.{minor}"


def _program_log(nvrtc: Any, program: Any) -> str:
    size = _check(nvrtc.nvrtcGetProgramLogSize(program), "nvrtcGetProgramLogSize")
    buffer = b" " * size
    _check(nvrtc.nvrtcGetProgramLog(program, buffer), "nvrtcGetProgramLog")
    return buffer.rstrip(b"\x00").decode(errors="replace").strip()


def _nvrtc_compile(source: str, name: str, options: list[str]) -> tuple[bytes, str, str]:
    """Compile to a cubin; returns (cubin, lowered kernel name, compiler log)."""
    _, nvrtc = _bindings()
    program = _check(
        nvrtc.nvrtcCreateProgram((PRELUDE + source).encode(), b"kernel.cu", 0, [], []), "nvrtcCreateProgram"
    )
    try:
        _check(nvrtc.nvrtcAddNameExpression(program, name.encode()), "nvrtcAddNameExpression")
        encoded = [o.encode() for o in options]
        (status,) = nvrtc.nvrtcCompileProgram(program, len(encoded), encoded)
        log = _program_log(nvrtc, program)
        if int(status) != 0:
            error = CompileError.from_log("NVRTC", log)
            if "__nv_name_map" in str(error):  # NVRTC's wording for an unknown name expression
                raise CompileError(f"NVRTC: no __global__ function named {name!r} in the source", log=log)
            raise error
        lowered = nvrtc.nvrtcGetLoweredName(program, name.encode())
        if int(lowered[0]) != 0:
            raise CompileError(f"NVRTC: no __global__ function named {name!r} in the source", log=log)
        size = _check(nvrtc.nvrtcGetCUBINSize(program), "nvrtcGetCUBINSize")
        cubin = b" " * size
        _check(nvrtc.nvrtcGetCUBIN(program, cubin), "nvrtcGetCUBIN")
        return cubin, lowered[1].decode(), log
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def _current_context(device_index: int) -> None:
    """Make the device's primary context (the one PyTorch uses) current on this thread."""
    import torch

    driver, _ = _bindings()
    torch.cuda.init()
    _check(driver.cuInit(0), "cuInit")
    context = _check(driver.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if context is None or int(context) == 0:
        device = _check(driver.cuDeviceGet(device_index), "cuDeviceGet")
        context = _check(driver.cuDevicePrimaryCtxRetain(device), "cuDevicePrimaryCtxRetain")
        _check(driver.cuCtxSetCurrent(context), "cuCtxSetCurrent")


def _triple(value: int | Sequence[int], what: str) -> tuple[int, int, int]:
    dims = [int(value)] if isinstance(value, int) or hasattr(value, "__index__") else [int(v) for v in value]
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
        raise KernelLaunchError(f"{what} must be 1 to 3 positive integers, got {value!r}")
    x, y, z = [*dims, 1, 1][:3]
    return x, y, z


@dataclass
class CudaKernel(Compiled):
    """A compiled kernel; call it with its arguments and `grid=`, `block=`, optional `shared_mem=`."""

    lowered_name: str
    arch: str
    cubin: bytes
    _functions: dict[int, Any] = field(default_factory=dict, repr=False)
    _shared_limits: dict[int, int] = field(default_factory=dict, repr=False)

    def _function(self, device_index: int) -> Any:
        if device_index not in self._functions:
            driver, _ = _bindings()
            _current_context(device_index)
            module = _check(driver.cuModuleLoadData(self.cubin), f"loading kernel {self.name}")
            self._functions[device_index] = _check(
                driver.cuModuleGetFunction(module, self.lowered_name.encode()), f"finding kernel {self.name}"
            )
        return self._functions[device_index]

    def __call__(
        self,
        *args: Any,
        grid: int | Sequence[int],
        block: int | Sequence[int],
        shared_mem: int = 0,
        stream: Any = None,
    ) -> None:
        """Launch on `stream` (default: PyTorch's current stream of the current device); returns at once."""
        import torch

        driver, _ = _bindings()
        device_index = torch.cuda.current_device()
        function = self._function(device_index)
        if shared_mem > max(DEFAULT_SHARED_MEMORY_LIMIT, self._shared_limits.get(device_index, 0)):
            attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            _check(
                driver.cuFuncSetAttribute(function, attribute, shared_mem), "raising the shared-memory limit"
            )
            self._shared_limits[device_index] = shared_mem
        if stream is None:
            stream = torch.cuda.current_stream()
        handle = stream.cuda_stream if hasattr(stream, "cuda_stream") else int(stream)
        values = pack_arguments(self.params, args, "cuda", f"kernel {self.name}")
        pointers = (ctypes.c_void_p * max(1, len(values)))(*[ctypes.addressof(v) for v in values])
        gx, gy, gz = _triple(grid, "grid")
        bx, by, bz = _triple(block, "block")
        (status,) = driver.cuLaunchKernel(
            function,
            gx,
            gy,
            gz,
            bx,
            by,
            bz,
            shared_mem,
            driver.CUstream(handle),
            ctypes.addressof(pointers),
            0,
        )
        if int(status) != 0:
            _, error_name = driver.cuGetErrorName(status)
            raise KernelLaunchError(
                f"launching {self.name} with grid={grid} block={block} shared_mem={shared_mem} failed: "
                f"{error_name.decode() if error_name else status}"
            )


_compiled: ProcessCache[CudaKernel] = ProcessCache()


def compiled_kernel_names() -> set[str]:
    """The names (as compiled: extern "C" names, or mangled C++ names) of every kernel compiled here."""
    return {kernel.lowered_name for kernel in _compiled.values()}


def compile_cuda(
    source: str,
    name: str,
    *,
    options: Sequence[str] = (),
    arch: str | None = None,
    disk_cache: bool = True,
) -> CudaKernel:
    """Compile the `__global__` function `name` (a template instance such as 'add<float>' works too).

    Results are cached in memory and on disk by source, name, options, target and NVRTC version.
    `arch` defaults to the current GPU's; compiling needs no GPU when it is given. `disk_cache=False`
    neither reads nor writes the disk cache (for code that must be what was compiled, whoever can write
    the cache: the judge's own kernels); NVRTC compiles in memory.
    """
    arch = arch or device_arch()
    all_options = [f"--gpu-architecture={arch}", "-std=c++17", *options]
    all_options += [f"-I{d}" for d in include_dirs()]
    key = content_key(source, name, "\0".join(all_options), _nvrtc_version())
    key = _compiled.key(key, disk_cache)
    if (kernel := _compiled.get(key)) is not None:
        return kernel
    params = parse_signature(source, name)
    started = time.perf_counter()
    directory = cache_dir("cuda")
    cubin_path, meta_path = directory / f"{key}.cubin", directory / f"{key}.json"
    cached = disk_cache and cubin_path.is_file() and meta_path.is_file()
    if cached and artifact_trusted(key, cubin_path, meta_path):
        meta = json.loads(meta_path.read_text())
        cubin = cubin_path.read_bytes()
        kernel = CudaKernel(
            meta["lowered_name"], arch, cubin, name=name, params=params, log=meta["log"], from_cache=True
        )
    else:
        cubin, lowered, log = _nvrtc_compile(source, name, all_options)
        if disk_cache:
            write_atomically(cubin_path, cubin)
            write_atomically(meta_path, json.dumps({"lowered_name": lowered, "log": log}).encode())
            seal_artifact(key, cubin_path, meta_path)
        kernel = CudaKernel(lowered, arch, cubin, name=name, params=params, log=log)
    kernel.compile_seconds = time.perf_counter() - started
    return _compiled.add(key, kernel)
