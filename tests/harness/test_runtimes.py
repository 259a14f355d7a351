"""Kernels compiled by other runtimes (CuPy, Numba, cuda-python) are the solution's own when their source
is the solution's; library kernels reached through them are not, whatever a decoy is named."""

from __future__ import annotations

from pathlib import Path

from cudasmith.harness.workers.observe import OwnKernels
from cudasmith.harness.workers.origins import Origins
from cudasmith.harness.workers.runtimes import global_functions, numba_pattern

SOURCE = '''
import cupy
relu = cupy.RawKernel(r"""
extern "C" __global__ void relu_raw(const float* x, float* y, long n) {}
""", "relu_raw")
module = cupy.RawModule(code=r"""
template <typename T> __global__ void __launch_bounds__(256) scale(T* x) {}
__global__ void ampere_sgemm_128x64_nn(float* a) {}
""")
'''


def test_global_functions_written_in_the_solution_are_its_own() -> None:
    assert global_functions(SOURCE) == {"relu_raw", "scale", "ampere_sgemm_128x64_nn"}
    own = OwnKernels(Origins((), frozenset()), SOURCE)
    own.refresh()
    assert own.is_own("relu_raw")
    assert own.is_own("void scale<float>(float*)")  # a C++ kernel as the profiler shows it
    # A decoy named after a cuBLAS kernel claims nothing, nor does CuPy's own routine or ATen's.
    assert not own.is_own("ampere_sgemm_128x64_nn")
    assert not own.is_own("cupy_multiply__float_float_float")
    assert not own.is_own("void at::native::vectorized_elementwise_kernel<4, scale>(int, scale)")
    assert not own.is_own("void other_scale<float>(float*)")


def test_numba_kernels_are_recognised_by_their_python_function() -> None:
    pattern = numba_pattern("relu")
    assert pattern.search("cudapy::__main__::relu_241(Array<float, 1, C, mutable, aligned>)")
    assert pattern.search("_ZN6cudapy8__main__8relu_241B96cw51cXTLSUwv1sDUaKtnRXAA")
    assert not pattern.search("cudapy::__main__::prelu_2(Array<float, 1, C, mutable, aligned>)")


def test_a_solution_without_kernels_claims_none(tmp_path: Path) -> None:
    own = OwnKernels(Origins((), frozenset()), "import torch\n")
    own.refresh()
    assert not own.is_own("relu_raw")
