"""The candidate runtime: C functions on the CPU, NVRTC compilation anywhere, launches on the GPU."""

from __future__ import annotations

import ctypes
import importlib.util
import time

import numpy as np
import pytest
import torch

from cudasmith.errors import CompileError
from cudasmith.runtime import compile_c, compile_cuda
from cudasmith.runtime.signature import parse_signature

from conftest import EXAMPLES

HAS_NVRTC = importlib.util.find_spec("cuda.bindings") is not None

SAXPY_C = r"""
/* y = a * x + y */
void saxpy(long n, float a, const float* __restrict__ x, float* y) {
    for (long i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}
"""

SAXPY_CUDA = r"""
#include <cuda_fp16.h>
extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
template <typename T>
__global__ void scale(T* data, T factor, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] *= factor;
}
"""


def test_signature_parser_reads_qualifiers_templates_and_skips_comments() -> None:
    source = "// saxpy(int wrong)\n" + SAXPY_CUDA + "\nvoid caller() { saxpy(1, 2.0f, 0, 0); }"
    params = parse_signature(source, "saxpy")
    assert [(p.name, p.type_name, p.pointer) for p in params] == [
        ("n", "int", False),
        ("a", "float", False),
        ("x", "float", True),
        ("y", "float", True),
    ]
    scale = parse_signature(SAXPY_CUDA, "scale<float>")
    assert [(p.type_name, p.pointer) for p in scale] == [("T", True), ("T", False), ("unsigned int", False)]
    assert parse_signature("void f(void) {}", "f") == []
    assert parse_signature("int x;", "f") is None


def test_c_function_computes_with_tensors_and_python_scalars() -> None:
    saxpy = compile_c(SAXPY_C, "saxpy")
    x, y = torch.randn(1001), torch.randn(1001)
    expected = 2.5 * x + y
    saxpy(x.numel(), 2.5, x, y)
    torch.testing.assert_close(y, expected)


def test_c_compilation_is_cached_in_memory_and_on_disk() -> None:
    source = SAXPY_C + "\n/* cache test */\n"
    first = compile_c(source, "saxpy")
    assert compile_c(source, "saxpy") is first
    from cudasmith.runtime import cpu

    cpu._compiled.clear()
    again = compile_c(source, "saxpy")
    assert again.from_cache and again is not first


def test_arguments_are_checked_against_the_signature() -> None:
    saxpy = compile_c(SAXPY_C, "saxpy")
    x = torch.randn(4)
    with pytest.raises(TypeError, match="takes 4 arguments, got 3"):
        saxpy(4, 1.0, x)
    with pytest.raises(TypeError, match=r"argument 0 \(long n\) is an integer"):
        saxpy(4.0, 1.0, x, x)
    with pytest.raises(TypeError, match="is a pointer"):
        saxpy(4, 1.0, "x", x)
    with pytest.raises(TypeError, match="not a pointer but got a tensor"):
        saxpy(x, 1.0, x, x)
    int_function = compile_c("void f(int n, int* out) { out[0] = n; }", "f")
    with pytest.raises(OverflowError, match="does not fit in int"):
        int_function(2**31, torch.zeros(1, dtype=torch.int32))
    out = torch.zeros(1, dtype=torch.int32)
    int_function(np.int32(-7), out)
    assert out.item() == -7
    int_function(ctypes.c_int32(9), out)
    assert out.item() == 9


def test_c_compile_errors_carry_the_compiler_log() -> None:
    with pytest.raises(CompileError, match="undeclared") as raised:
        compile_c("void f(float* x) { x[0] = nope; }", "f")
    assert "nope" in raised.value.log
    with pytest.raises(CompileError, match="no exported function named 'g'"):
        compile_c("void f(float* x) { x[0] = 1; }", "g")


@pytest.mark.skipif(not HAS_NVRTC, reason="needs cuda-python (pip install 'cudasmith[cuda]')")
class TestNvrtc:
    """NVRTC needs no GPU: compilation and its errors are tested everywhere."""

    def test_compiles_plain_and_template_kernels_quickly(self) -> None:
        started = time.perf_counter()
        kernel = compile_cuda(SAXPY_CUDA, "saxpy", arch="sm_90a")
        assert time.perf_counter() - started < 5.0  # NVRTC, not a 45 s extension build
        assert kernel.cubin and kernel.lowered_name == "saxpy"
        scale = compile_cuda(SAXPY_CUDA, "scale<float>", arch="sm_90a")
        assert scale.lowered_name.startswith("_Z")
        assert compile_cuda(SAXPY_CUDA, "saxpy", arch="sm_90a") is kernel

    def test_compile_errors_name_the_problem(self) -> None:
        with pytest.raises(CompileError, match='identifier "undefined_thing" is undefined') as raised:
            compile_cuda("__global__ void k(float* x) { x[0] = undefined_thing; }", "k", arch="sm_90a")
        assert "kernel.cu" in raised.value.log
        with pytest.raises(CompileError, match="no __global__ function named 'absent'"):
            compile_cuda(SAXPY_CUDA, "absent", arch="sm_90a")

    def test_c_constants_exist_and_line_numbers_are_the_sources(self) -> None:
        kernel = compile_cuda(
            "__global__ void k(float* x) { x[0] = -INFINITY; x[1] = NAN; x[2] = FLT_MAX; }",
            "k",
            arch="sm_90a",
        )
        assert kernel.cubin
        with pytest.raises(CompileError, match=r"kernel.cu\(3\): error"):
            compile_cuda("// one\n// two\n__global__ void k(float* x) { x[0] = bad; }", "k", arch="sm_90a")

    def test_cuda_examples_compile(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("CUDASMITH_CUDA_ARCH", "sm_90a")
        from cudasmith.tasks.problem import load_module

        for example in ("softmax_cuda.py",):
            module = load_module(EXAMPLES / example, "example")
            assert module.softmax_rows.cubin

    def test_disk_cache_survives_a_new_process_state(self) -> None:
        from cudasmith.runtime import cuda

        source = SAXPY_CUDA + "\n// disk cache\n"
        compile_cuda(source, "saxpy", arch="sm_90a")
        cuda._compiled.clear()
        assert compile_cuda(source, "saxpy", arch="sm_90a").from_cache


@pytest.mark.gpu
def test_cuda_kernel_launches_on_torch_stream_and_computes() -> None:
    saxpy = compile_cuda(SAXPY_CUDA, "saxpy")
    x = torch.randn(100_003, device="cuda")
    y = torch.randn(100_003, device="cuda")
    expected = 3.0 * x + y
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        saxpy(x.numel(), 3.0, x, y, grid=(x.numel() + 255) // 256, block=256)
    stream.synchronize()
    torch.testing.assert_close(y, expected)
    scale = compile_cuda(SAXPY_CUDA, "scale<float>")
    scale(y, np.float32(0.5), y.numel(), grid=(y.numel() + 127) // 128, block=128)
    torch.testing.assert_close(y, expected * 0.5)
    with pytest.raises(TypeError, match="must be a cuda tensor"):
        saxpy(4, 1.0, torch.zeros(4), y, grid=1, block=4)


@pytest.mark.gpu
def test_a_fresh_nvrtc_compile_says_how_long_it_took() -> None:
    # How long that is (well under a second) is benchmarks/gpu_smoke.py's table, not a test's.
    source = SAXPY_CUDA + f"\n// unique {time.time_ns()}\n"
    kernel = compile_cuda(source, "saxpy")
    assert not kernel.from_cache and kernel.compile_seconds > 0
