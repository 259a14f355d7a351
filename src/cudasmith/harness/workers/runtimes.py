"""Kernels a solution compiles at run time through other runtimes than ours: CuPy, Numba, cuda-python.

They are the solution's own when their source is the solution's: a `__global__` function written in the
solution file (CuPy's RawKernel and RawModule, NVRTC through cuda-python or cuda.core), a CuPy
ElementwiseKernel or ReductionKernel whose operation is written there, a Numba CUDA kernel whose Python
function is the solution's code. Library compute reached through those runtimes (cuBLAS through
cupy.matmul, CuPy's own routines, whose kernels are named cupy_*) is not: their names are reserved
(observe.RESERVED_KERNEL_NAME), so naming a kernel after one claims nothing.
"""

from __future__ import annotations

import gc
import re
import sys
from typing import Any

from cudasmith.harness.workers.origins import Origins

# A __global__ function's name in CUDA C++ source: the identifier before its parameter list (after any
# qualifiers, the return type and __launch_bounds__).
GLOBAL_FUNCTION = re.compile(
    r"__global__\s+(?:[\w:<>,\s]*?\s)?(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*(?:<[^>]*>)?\s*\("
)
# CuPy's kernel classes whose `code` is CUDA C++, and those whose `operation` is a body CuPy wraps.
CUPY_SOURCE_CLASSES = ("RawKernel", "RawModule")
CUPY_OPERATION_CLASSES = ("ElementwiseKernel", "ReductionKernel")


def global_functions(source: str) -> set[str]:
    """The names of the `__global__` functions defined in some source text."""
    return set(GLOBAL_FUNCTION.findall(source))


def _squeezed(text: str) -> str:
    return "".join(text.split())


def _cupy_names(solution_source: str) -> set[str]:
    """Names of CuPy kernels alive in this process whose source is written in the solution."""
    cupy = sys.modules.get("cupy")
    if cupy is None:
        return set()
    raw = tuple(t for n in CUPY_SOURCE_CLASSES if isinstance(t := getattr(cupy, n, None), type))
    wrapped = tuple(t for n in CUPY_OPERATION_CLASSES if isinstance(t := getattr(cupy, n, None), type))
    squeezed = _squeezed(solution_source)
    names: set[str] = set()
    for obj in gc.get_objects():
        if raw and isinstance(obj, raw):
            code = str(getattr(obj, "code", "") or "")
            if code and _squeezed(code) in squeezed:
                names |= global_functions(code)
                names.add(str(getattr(obj, "name", "") or ""))
        elif wrapped and isinstance(obj, wrapped):
            operation = str(getattr(obj, "operation", "") or getattr(obj, "map_expr", "") or "")
            if operation and _squeezed(operation) in squeezed:
                names.add(str(getattr(obj, "name", "") or ""))
    names.discard("")
    return names


def _numba_functions(origins: Origins) -> set[str]:
    """Names of the Python functions behind Numba CUDA kernels defined in the solution's code."""
    dispatcher_module = sys.modules.get("numba.cuda.dispatcher")
    dispatcher = getattr(dispatcher_module, "CUDADispatcher", None) if dispatcher_module else None
    if not isinstance(dispatcher, type):
        return set()
    found = set()
    for obj in gc.get_objects():
        if isinstance(obj, dispatcher):
            function: Any = getattr(obj, "py_func", None)
            code = getattr(function, "__code__", None)
            if code is not None and origins.of(code) == "candidate":
                found.add(function.__name__)
    return found


def numba_pattern(function: str) -> re.Pattern[str]:
    """How Numba names a kernel compiled from `function` (cudapy::module::function_N, mangled or not)."""
    return re.compile(rf"cudapy.*?(?<![A-Za-z_]){re.escape(function)}(?:_\d+)?(?![A-Za-z])")


def identifier_pattern(name: str) -> re.Pattern[str]:
    """How a profiler shows a C++ kernel named `name`: demangled, with its namespace, template arguments
    and parameter list ('void ns::relu<float>(float const*, long)')."""
    return re.compile(rf"^(?:void\s+)?(?:\w+::)*{re.escape(name)}\s*(?:<.*>)?\s*\(")


def runtime_kernels(origins: Origins, solution_source: str) -> tuple[set[str], list[re.Pattern[str]]]:
    """The kernel names other runtimes compiled from the solution's source, and patterns for how the
    profiler shows them (C++ signatures; Numba's cudapy:: names)."""
    names = global_functions(solution_source) | _cupy_names(solution_source)
    patterns = [identifier_pattern(name) for name in sorted(names)]
    patterns += [numba_pattern(function) for function in sorted(_numba_functions(origins))]
    return names, patterns
