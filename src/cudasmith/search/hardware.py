"""What a prompt says about the device a kernel will run on, read from the device itself.

GPU facts come from torch's device properties (and the CUDA driver where torch does not report them),
CPU facts from /proc and /sys. Measured figures (bandwidth, peak rates) are never guessed nor measured
here: they are those a caller passes, else the peaks `cudasmith device` cached for the device, else a
line saying that `cudasmith device` measures them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cudasmith.device import DevicePeaks, load_peaks
from cudasmith.hardware import cpu_name, driver_attributes

# What each compute capability adds that a kernel writer can use (the nearest one at or below the
# device's, within its major version, applies).
CAPABILITY_FEATURES = {
    (7, 0): "Volta: FP16 tensor cores (mma.sync), independent thread scheduling",
    (7, 5): "Turing: FP16 and INT8 tensor cores (mma.sync)",
    (8, 0): "Ampere: FP16, BF16 and TF32 tensor cores (mma.sync), cp.async global-to-shared copies",
    (8, 9): "Ada: FP8, FP16, BF16 and TF32 tensor cores (mma.sync), cp.async",
    (9, 0): (
        "Hopper: wgmma warpgroup tensor-core MMA (FP8, FP16, BF16, TF32), TMA bulk tensor copies, "
        "thread block clusters with distributed shared memory, mbarrier, setmaxnreg"
    ),
    (10, 0): (
        "Blackwell: tcgen05 tensor-core MMA with tensor memory (TMEM), FP4, FP6 and FP8 tensor cores, "
        "TMA, thread block clusters"
    ),
    (
        12,
        0,
    ): "Blackwell (workstation): FP4, FP6, FP8 and BF16 tensor cores through mma.sync; no wgmma or tcgen05",
}
# Measured figures a caller may pass, with their labels and units.
MEASURED = {
    "dram_bandwidth_gbs": ("measured DRAM bandwidth", "GB/s"),
    "l2_bandwidth_gbs": ("measured L2 bandwidth", "GB/s"),
    "fp32_tflops": ("measured FP32 peak", "TFLOP/s"),
    "fp64_tflops": ("measured FP64 peak", "TFLOP/s"),
    "tf32_tflops": ("measured TF32 tensor-core peak", "TFLOP/s"),
    "fp16_tflops": ("measured FP16 tensor-core peak", "TFLOP/s"),
    "bf16_tflops": ("measured BF16 tensor-core peak", "TFLOP/s"),
    "fp8_tflops": ("measured FP8 tensor-core peak", "TFLOP/s"),
}
# The MEASURED keys of DevicePeaks' rates: the best of any unit for a dtype, and the matrix units' rate
# (cuBLAS on tensor cores) for the figures MEASURED calls tensor-core peaks.
BEST_RATES = {"fp32_tflops": "float32", "fp64_tflops": "float64"}
MATRIX_RATES = {"tf32_tflops": "tf32", "fp16_tflops": "float16", "bf16_tflops": "bfloat16"}
NOT_MEASURED = (
    "measured bandwidth and peak FLOP rates",
    "not measured on this machine yet (`cudasmith device` measures them)",
)
# CPU instruction-set extensions worth a kernel writer's attention, as /proc/cpuinfo names them.
CPU_EXTENSIONS = (
    "sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
    "avx512_fp16", "amx_tile", "amx_bf16", "asimd", "asimddp", "sve", "sve2",
)  # fmt: skip
DRIVER_ATTRIBUTES = {
    "registers_per_block": "CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK",
    "registers_per_sm": "CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR",
    "shared_per_block_optin": "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
    "max_blocks_per_sm": "CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR",
}


@dataclass(frozen=True)
class Hardware:
    """Facts about one device, each a label and a value with its unit; `target` is the NVRTC target."""

    device: str
    name: str
    facts: tuple[tuple[str, str], ...]
    target: str | None = None

    def block(self) -> str:
        """The facts as a Markdown list."""
        return "\n".join(f"- {label}: {value}" for label, value in self.facts)


def _size(n_bytes: int | None) -> str | None:
    if not n_bytes:
        return None
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:.4g} {unit}"
    return f"{n_bytes} B"


def capability_features(major: int, minor: int) -> str | None:
    """What the capability enables, from the nearest entry at or below it in the same major version."""
    known = [key for key in CAPABILITY_FEATURES if key[0] == major and key[1] <= minor]
    return CAPABILITY_FEATURES[max(known)] if known else None


def nvrtc_target(major: int, minor: int) -> str:
    """The target cudasmith.runtime.compile_cuda compiles for (the 'a' features from Hopper on)."""
    return f"sm_{major}{minor}{'a' if major >= 9 else ''}"


def gpu_facts(props: Any, driver: Mapping[str, int]) -> list[tuple[str, str]]:
    """Facts from torch's device properties and driver attributes (both may lack fields)."""
    major, minor = props.major, props.minor
    facts: list[tuple[str, str | None]] = [
        ("GPU", props.name),
        ("compute capability", f"{major}.{minor}; kernels are compiled for {nvrtc_target(major, minor)}"),
        ("what it enables", capability_features(major, minor)),
        ("streaming multiprocessors (SMs)", str(props.multi_processor_count)),
        ("warp size", str(getattr(props, "warp_size", 32))),
        ("max threads per SM", str(getattr(props, "max_threads_per_multi_processor", "")) or None),
        (
            "max resident blocks per SM",
            str(driver["max_blocks_per_sm"]) if "max_blocks_per_sm" in driver else None,
        ),
        ("shared memory per block", _size(getattr(props, "shared_memory_per_block", None))),
        (
            "shared memory per block (opt-in, dynamic)",
            _size(
                getattr(props, "shared_memory_per_block_optin", None) or driver.get("shared_per_block_optin")
            ),
        ),
        ("shared memory per SM", _size(getattr(props, "shared_memory_per_multiprocessor", None))),
        (
            "32-bit registers per block",
            str(driver["registers_per_block"]) if "registers_per_block" in driver else None,
        ),
        (
            "32-bit registers per SM",
            str(getattr(props, "regs_per_multiprocessor", None) or driver.get("registers_per_sm") or "")
            or None,
        ),
        ("L2 cache", _size(getattr(props, "L2_cache_size", None))),
        ("device memory", _size(getattr(props, "total_memory", None))),
    ]
    clock_khz, bus_bits = getattr(props, "memory_clock_rate", 0), getattr(props, "memory_bus_width", 0)
    if clock_khz and bus_bits:
        # Double data rate: two transfers per clock over the whole bus.
        peak = 2 * clock_khz * 1e3 * bus_bits / 8 / 1e9
        facts.append(("DRAM bandwidth (theoretical: memory clock × bus width)", f"{peak:.0f} GB/s"))
    return [(label, value) for label, value in facts if value]


def _cpu_caches() -> str | None:
    caches = []
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level, kind, size = ((index / f).read_text().strip() for f in ("level", "type", "size"))
        except OSError:
            continue
        if kind != "Instruction":
            caches.append(f"L{level} {size}" + (" per core" if level in ("1", "2") else " shared"))
    return ", ".join(caches) or None


def _cpu_extensions() -> str | None:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    flags = next(
        (
            line.split(":", 1)[1].split()
            for line in text.splitlines()
            if line.startswith(("flags", "Features"))
        ),
        [],
    )
    present = [flag for flag in CPU_EXTENSIONS if flag in flags]
    return ", ".join(present) or None


def cpu_facts() -> list[tuple[str, str]]:
    """Facts about this machine's processor."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    facts = [
        ("CPU", cpu_name()),
        ("cores available", str(cores)),
        ("SIMD extensions", _cpu_extensions()),
        ("caches", _cpu_caches()),
    ]
    return [(label, value) for label, value in facts if value]


def measured_facts(measured: Mapping[str, float]) -> list[tuple[str, str]]:
    """Measured figures in the order of MEASURED; unknown keys keep their own names."""
    facts = [(MEASURED[k][0], f"{measured[k]:.4g} {MEASURED[k][1]}") for k in MEASURED if k in measured]
    return facts + [(k, f"{v:.4g}") for k, v in measured.items() if k not in MEASURED]


def peak_figures(peaks: DevicePeaks) -> dict[str, float]:
    """Measured peaks under MEASURED's keys and units; a rate that was not measured is left out."""
    figures = {"dram_bandwidth_gbs": peaks.memory_gb_per_s}
    for key, dtype in BEST_RATES.items():
        rate = peaks.compute_tflops(dtype)
        if rate:
            figures[key] = rate
    for key, dtype in MATRIX_RATES.items():
        if peaks.matrix_tflops.get(dtype):
            figures[key] = peaks.matrix_tflops[dtype]
    return figures


def describe_hardware(device: str, measured: Mapping[str, float] | None = None) -> Hardware:
    """The facts of `device` ('cuda', 'cuda:N' or 'cpu') as this machine reports them.

    Without `measured`, the peaks cached by `cudasmith device` for this device are shown (nothing is
    measured here), or a line saying how to measure them.
    """
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            note = "not known: no CUDA GPU is visible on the machine that wrote this prompt"
            return Hardware(device, "unknown GPU", (("GPU", note),))
        index = torch.device(device).index or 0
        props = torch.cuda.get_device_properties(index)
        facts = gpu_facts(props, driver_attributes(index, DRIVER_ATTRIBUTES))
        name, target = props.name, nvrtc_target(props.major, props.minor)
        peaks_name: str | None = props.name
    else:
        facts, name, target, peaks_name = cpu_facts(), cpu_name(), None, None
    if measured is None:
        peaks = load_peaks(device, name=peaks_name)
        measured = peak_figures(peaks) if peaks is not None else None
    facts += measured_facts(measured) if measured is not None else [NOT_MEASURED]
    return Hardware(device, name, tuple(facts), target)
