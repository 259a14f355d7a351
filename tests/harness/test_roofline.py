"""The roofline: speed of light, % of it, and the floor under which a time is impossible."""

from __future__ import annotations

import pytest

from cudasmith.device import DevicePeaks
from cudasmith.harness.wire.results import ConfigDescription
from cudasmith.harness.witnesses.roofline import PHYSICS_MARGIN, roofline, work_of

# An H100-like device: 3000 GB/s, 50 TFLOP/s in float32, 800 in bfloat16, 50 MiB of L2.
PEAKS = DevicePeaks(
    device="test GPU",
    kind="cuda",
    memory_gb_per_s=3000.0,
    matrix_tflops={"float32": 50.0, "bfloat16": 800.0},
    vector_tflops={"float32": 60.0},
    cache_bytes=50 * 2**20,
)

# A CPU-like device: float32 and float64 rates only, as `cudasmith device` measures a CPU.
CPU_PEAKS = DevicePeaks(
    device="test CPU",
    kind="cpu",
    memory_gb_per_s=20.0,
    matrix_tflops={"float32": 0.5, "float64": 0.25},
    vector_tflops={"float32": 0.25},
    cache_bytes=32 * 2**20,
)
GEMM_8192 = ConfigDescription(flops=2 * 8192**3, bytes_moved=3 * 2 * 8192**2)
COPY_1GB = ConfigDescription(input_bytes=10**9, output_bytes=10**9, flops=10**6)


def test_a_memory_bound_config_runs_at_bandwidth() -> None:
    point = roofline(
        ConfigDescription(input_bytes=8 * 10**9, output_bytes=4 * 10**9, flops=10**9), "float32", PEAKS
    )
    assert point is not None and point.bound == "memory"
    assert point.sol_ms == pytest.approx(12e9 / 3000e9 * 1e3)  # 4 ms
    assert point.sol_pct(8.0) == pytest.approx(50.0)
    floor = (12e9 - 50 * 2**20) / (PHYSICS_MARGIN["cuda"] * 3000e9) * 1e3
    assert point.floor_ms == pytest.approx(floor)
    assert point.impossible(floor * 0.99) and "impossible" in point.impossible(floor * 0.99)
    assert point.impossible(point.sol_ms * 0.9) is None  # a little faster than measured peaks is possible
    assert "no work on the device" in point.impossible(0.0)


def test_a_compute_bound_config_uses_its_dtype_and_the_floor_any_dtype() -> None:
    gemm = ConfigDescription(flops=2 * 8192**3, bytes_moved=3 * 4 * 8192**2)
    fp32 = roofline(gemm, "float32", PEAKS)
    assert fp32 is not None and fp32.bound == "compute"
    assert fp32.sol_ms == pytest.approx(2 * 8192**3 / 60e12 * 1e3)  # the faster of matrix and vector units
    assert fp32.floor_ms == pytest.approx(2 * 8192**3 / (PHYSICS_MARGIN["cuda"] * 800e12) * 1e3)
    assert roofline(gemm, None, PEAKS).sol_ms == fp32.sol_ms  # no DTYPE: judged as float32


def test_bytes_that_fit_on_chip_do_not_make_a_floor() -> None:
    point = roofline(ConfigDescription(input_bytes=8 * 2**20, output_bytes=4 * 2**20), "float32", PEAKS)
    assert point is not None and point.sol_ms > 0 and point.floor_ms == 0.0


def test_work_comes_from_bytes_moved_or_inputs_and_outputs() -> None:
    assert work_of(ConfigDescription(99, output_bytes=99, flops=3, bytes_moved=10)) == (3.0, 10.0)
    assert work_of(ConfigDescription(input_bytes=8, output_bytes=4)) == (0.0, 12.0)
    assert work_of(ConfigDescription(unknown="data-dependent")) is None
    assert roofline(ConfigDescription(unknown="x"), "float32", PEAKS) is None


@pytest.mark.parametrize("peaks", [PEAKS, CPU_PEAKS], ids=["gpu", "cpu"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16", "int32", None])
@pytest.mark.parametrize("work", [GEMM_8192, COPY_1GB], ids=["gemm", "copy"])
def test_the_floor_never_exceeds_speed_of_light(
    peaks: DevicePeaks, dtype: str | None, work: ConfigDescription
) -> None:
    point = roofline(work, dtype, peaks)
    assert point is not None and 0 < point.floor_ms <= point.sol_ms


def test_a_dtype_without_a_measured_rate_is_judged_at_the_best_rate_measured() -> None:
    bf16 = roofline(GEMM_8192, "bfloat16", CPU_PEAKS)
    assert bf16 is not None and bf16.bound == "compute" and bf16.compute_tflops == 0.5
    assert bf16.sol_ms == pytest.approx(2 * 8192**3 / 0.5e12 * 1e3)
    assert bf16.floor_ms == pytest.approx(bf16.sol_ms / PHYSICS_MARGIN["cpu"])
    nothing_measured = DevicePeaks("test CPU", "cpu", 20.0, {}, {}, 0)
    point = roofline(GEMM_8192, "bfloat16", nothing_measured)
    assert point is not None and point.bound == "memory" and point.compute_tflops is None
    assert point.floor_ms <= point.sol_ms == pytest.approx(3 * 2 * 8192**2 / 20e9 * 1e3)
