"""Measuring a device's speed of light: device-memory bandwidth and matrix/vector FLOP rates per dtype.

Each rate is timed with the timing protocol (warm L2, since the buffers are many times its size and the
FLOP kernels barely touch memory). Matrix rates come from PyTorch's matmul (cuBLAS, or MKL/oneDNN on the
CPU); vector rates from kernels of independent fused multiply-adds (NVRTC on the GPU, C on the CPU).
"""

from __future__ import annotations

import ctypes
import functools
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

from cudasmith.device import (
    DevicePeaks,
    cache_bytes,
    device_name,
    load_peaks,
    save_peaks,
    software_versions,
    usable_device,
)
from cudasmith.errors import CudasmithError
from cudasmith.hardware import read_device
from cudasmith.runtime.cpu import compile_c
from cudasmith.runtime.cuda import compile_cuda
from cudasmith.timestamps import now_iso
from cudasmith.timing.cuda import tools
from cudasmith.timing.measure import measure
from cudasmith.timing.protocol import TimingPlan

# Peaks are estimated from a short run each: their noise matters far less than a kernel's.
PLAN = TimingPlan(l2_state="hot", warmup_ms=20.0, min_sampling_s=0.05, max_seconds=0.5)
# Matrix sizes (n×n times n×n): large enough for the libraries to reach their peak.
GPU_MATRIX_N = {"float32": 4096, "tf32": 8192, "float16": 8192, "bfloat16": 8192, "float64": 4096}
CPU_MATRIX_N = {"float32": 1024, "float64": 1024}
# Bandwidth buffers: many times any cache; on the GPU at most this share of its memory.
GPU_BANDWIDTH_BYTES = 1024**3
GPU_BANDWIDTH_MEMORY_SHARE = 8
CPU_BANDWIDTH_BYTES = 256 * 1024**2
# Vector kernels: independent FMA chains per thread, threads per block, blocks per SM, iterations
# (about 2 ms per launch on an H100, and far from the launch overhead on any GPU).
FMA_CHAINS = 8
FMA_THREADS = 256
FMA_BLOCKS_PER_SM = 8
FMA_ITERATIONS = 32768
# The CPU vector kernel: accumulators per thread (enough to fill every FMA unit) and iterations.
CPU_FMA_LANES = 64
CPU_FMA_ITERATIONS = 200_000

GPU_FMA_SOURCE = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#define CHAINS 8
#define FMA_KERNEL(NAME, T, FROM_FLOAT, FMA)                                                    \
extern "C" __global__ void NAME(float* out, int iterations) {                                   \
    T x[CHAINS];                                                                                \
    const T m = FROM_FLOAT(0.999f), a = FROM_FLOAT(0.001f);                                     \
    for (int c = 0; c < CHAINS; ++c) x[c] = FROM_FLOAT(threadIdx.x * 1e-3f + c);                \
    for (int i = 0; i < iterations; ++i) {                                                      \
        _Pragma("unroll") for (int c = 0; c < CHAINS; ++c) x[c] = FMA(x[c], m, a);              \
    }                                                                                           \
    float total = 0.0f;                                                                         \
    for (int c = 0; c < CHAINS; ++c) total += (float)sum_of(x[c]);                              \
    if (total == -1.0f) out[0] = total; /* never true: keeps the work */                        \
}
__device__ float sum_of(float v) { return v; }
__device__ double sum_of(double v) { return v; }
__device__ float sum_of(__half2 v) { return __low2float(v) + __high2float(v); }
__device__ float sum_of(__nv_bfloat162 v) { return __low2float(v) + __high2float(v); }
__device__ double fma64(double x, double m, double a) { return fma(x, m, a); }
__device__ double to64(float v) { return (double)v; }
__device__ float to32(float v) { return v; }
FMA_KERNEL(cudasmith_fma_float32, float, to32, fmaf)
FMA_KERNEL(cudasmith_fma_float64, double, to64, fma64)
FMA_KERNEL(cudasmith_fma_float16, __half2, __float2half2_rn, __hfma2)
FMA_KERNEL(cudasmith_fma_bfloat16, __nv_bfloat162, __float2bfloat162_rn, __hfma2)
"""
# FLOPs per FMA instruction of each vector kernel: 2, times 2 lanes for the paired 16-bit types.
GPU_FMA_FLOPS = {"float32": 2, "float64": 2, "float16": 4, "bfloat16": 4}

CPU_FMA_SOURCE = r"""
#include <omp.h>
#define LANES 64
#define FMA_FUNCTION(NAME, T, FMA)                                                              \
void NAME(T* out, long iterations, int* threads) {                                              \
    _Pragma("omp parallel")                                                                     \
    {                                                                                           \
        T x[LANES];                                                                             \
        for (int j = 0; j < LANES; ++j) x[j] = (T)(omp_get_thread_num() * 1e-3 + j);           \
        for (long i = 0; i < iterations; ++i)                                                   \
            for (int j = 0; j < LANES; ++j) x[j] = FMA(x[j], (T)0.999, (T)0.001);               \
        T total = 0;                                                                            \
        for (int j = 0; j < LANES; ++j) total += x[j];                                          \
        if (total == (T)-1) out[0] = total; /* never true: keeps the work */                    \
        if (omp_get_thread_num() == 0) *threads = omp_get_num_threads();                        \
    }                                                                                           \
}
FMA_FUNCTION(cudasmith_fma_float32, float, __builtin_fmaf)
FMA_FUNCTION(cudasmith_fma_float64, double, __builtin_fma)
"""
CPU_FMA_DTYPES = {"float32": torch.float32, "float64": torch.float64}


def _median_ms(call: Callable[[], Any], device: str) -> float:
    return measure(lambda _: call(), 1, device, PLAN).median_ms


def _bandwidth(device: str, total_bytes: int) -> dict[str, float]:
    """GB/s of reading, writing and copying buffers of `total_bytes` (each a multiple of 16 bytes)."""
    elements = total_bytes // 16 * 4
    source = torch.zeros(elements, dtype=torch.float32, device=device)
    target = torch.empty_like(source)
    nbytes = source.numel() * source.element_size()
    rates = {
        "copy": 2 * nbytes / _median_ms(lambda: target.copy_(source), device) / 1e6,
        "write": nbytes / _median_ms(lambda: target.fill_(1.0), device) / 1e6,
    }
    if device.startswith("cuda"):
        kit = tools(torch.cuda.current_device())
        if not isinstance(kit, str):
            stream = torch.cuda.current_stream().cuda_stream
            rates["read"] = nbytes / _median_ms(lambda: kit.launch_read(source, stream), device) / 1e6
    else:
        rates["read"] = nbytes / _median_ms(lambda: torch.sum(source), device) / 1e6
    return rates


def _matrix(device: str, sizes: dict[str, int]) -> dict[str, float]:
    """TFLOP/s of n×n matrix products per dtype ('tf32': float32 inputs on TF32 tensor cores)."""
    rates = {}
    previous = torch.backends.cuda.matmul.allow_tf32
    for name, n in sizes.items():
        dtype = torch.float32 if name == "tf32" else getattr(torch, name)
        a, b = (torch.randn(n, n, device=device).to(dtype) for _ in range(2))
        out = torch.empty(n, n, device=device, dtype=dtype)
        torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
        try:
            rates[name] = 2 * n**3 / _median_ms(functools.partial(torch.mm, a, b, out=out), device) / 1e9
        finally:
            torch.backends.cuda.matmul.allow_tf32 = previous
        del a, b, out
    return rates


def _gpu_vector() -> dict[str, float]:
    sm_count = read_device("cuda").sm_count or 1
    out = torch.zeros(1, device="cuda")
    threads = sm_count * FMA_BLOCKS_PER_SM * FMA_THREADS
    rates = {}
    for name, flops_per_fma in GPU_FMA_FLOPS.items():
        try:
            kernel = compile_cuda(GPU_FMA_SOURCE, f"cudasmith_fma_{name}")
        except CudasmithError:  # no fp16/bf16 headers for NVRTC here: that rate stays unmeasured
            continue
        grid = sm_count * FMA_BLOCKS_PER_SM

        def launch(kernel: Any = kernel, grid: int = grid) -> None:
            kernel(out, ctypes.c_int(FMA_ITERATIONS), grid=grid, block=FMA_THREADS)

        flops = threads * FMA_CHAINS * FMA_ITERATIONS * flops_per_fma
        rates[name] = flops / _median_ms(launch, "cuda") / 1e9
    return rates


def _cpu_vector() -> dict[str, float]:
    rates: dict[str, float] = {}
    threads = torch.zeros(1, dtype=torch.int32)
    iterations = ctypes.c_long(CPU_FMA_ITERATIONS)
    for name, dtype in CPU_FMA_DTYPES.items():
        try:
            function = compile_c(CPU_FMA_SOURCE, f"cudasmith_fma_{name}")
        except CudasmithError:  # no C compiler: the CPU's vector rate stays unmeasured
            return rates
        out = torch.zeros(1, dtype=dtype)
        median_ms = _median_ms(functools.partial(function, out, iterations, threads), "cpu")
        flops = 2 * CPU_FMA_LANES * CPU_FMA_ITERATIONS * int(threads.item())
        rates[name] = flops / median_ms / 1e9
    return rates


def measure_peaks(device: str = "cuda") -> DevicePeaks:
    """Measure the device's bandwidth and FLOP rates (a few seconds)."""
    started = time.perf_counter()
    with torch.no_grad():
        if device.startswith("cuda"):
            size = min(GPU_BANDWIDTH_BYTES, read_device(device).memory_bytes // GPU_BANDWIDTH_MEMORY_SHARE)
            bandwidth = _bandwidth(device, size)
            matrix = _matrix(device, GPU_MATRIX_N)
            vector = _gpu_vector()
            torch.cuda.empty_cache()
        else:
            bandwidth = _bandwidth("cpu", CPU_BANDWIDTH_BYTES)
            matrix = _matrix("cpu", CPU_MATRIX_N)
            vector = _cpu_vector()
    return DevicePeaks(
        device=device_name(device),
        kind="cuda" if device.startswith("cuda") else "cpu",
        memory_gb_per_s=max(bandwidth.values()),
        matrix_tflops=matrix,
        vector_tflops=vector,
        cache_bytes=cache_bytes(device),
        memory_detail_gb_per_s=bandwidth,
        versions=software_versions(),
        measured_at=now_iso(),
        seconds=round(time.perf_counter() - started, 2),
    )


# Peaks are the best of at least PEAK_REPEATS measurements. The best bandwidth is cached only when a
# second measurement confirms it within PEAKS_NOISY_SPREAD; up to PEAK_REPEATS_MAX are taken for that.
# Unconfirmed (something else was using the device, or it varies from run to run, as virtual machines'
# memory does), the best is used once and never cached. Work beside a measurement only lowers it, so the
# best of several is what the device can do; the confirmation keeps one lucky burst out of the cache.
PEAK_REPEATS = 3
PEAK_REPEATS_MAX = 5
PEAKS_NOISY_SPREAD = 0.10


def best_of(measurements: list[DevicePeaks]) -> DevicePeaks:
    """Each rate at its best over repeated measurements (what the device can do, not what it did once)."""
    first = measurements[0]

    def best(tables: list[dict[str, float]]) -> dict[str, float]:
        return {key: max(table.get(key, 0.0) for table in tables) for key in tables[0]}

    return replace(
        first,
        memory_gb_per_s=max(m.memory_gb_per_s for m in measurements),
        matrix_tflops=best([m.matrix_tflops for m in measurements]),
        vector_tflops=best([m.vector_tflops for m in measurements]),
        memory_detail_gb_per_s=best([m.memory_detail_gb_per_s for m in measurements]),
        seconds=round(sum(m.seconds for m in measurements), 2),
    )


def confirmed(measurements: list[DevicePeaks]) -> bool:
    """Whether the best bandwidth was measured twice, within PEAKS_NOISY_SPREAD of each other."""
    rates = sorted((m.memory_gb_per_s for m in measurements), reverse=True)
    return len(rates) > 1 and rates[0] > 0 and (rates[0] - rates[1]) / rates[0] <= PEAKS_NOISY_SPREAD


def ensure_peaks(
    device: str | None = None, remeasure: bool = False, repeats: int = PEAK_REPEATS
) -> DevicePeaks:
    """The device's peaks from the cache, else measured `repeats` times or more (seconds each): the best
    of them, cached only when a second measurement confirms the best (see PEAK_REPEATS_MAX). Rates that
    leave a doubt (DevicePeaks.doubts: matrix units far below the vector units) are measured again too,
    up to PEAK_REPEATS_MAX; still doubtful, they are kept all the same, and flagged wherever shown
    (`cudasmith device --remeasure` takes them again)."""
    device = usable_device(device)
    cached = None if remeasure else load_peaks(device)
    if cached is not None:
        return cached
    measurements = [measure_peaks(device) for _ in range(max(1, repeats))]
    while (not confirmed(measurements) or best_of(measurements).doubts()) and len(measurements) < max(
        repeats, PEAK_REPEATS_MAX
    ):
        measurements.append(measure_peaks(device))
    peaks = best_of(measurements)
    if confirmed(measurements):
        save_peaks(peaks)
    return peaks
