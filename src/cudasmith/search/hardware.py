"""What a prompt says about the device a kernel will run on, read from the device itself.

The device's facts are its `Device` (cudasmith.hardware: torch's properties and the CUDA driver for a
GPU, /proc and /sys for the CPU), read once. Measured figures (bandwidth, peak rates) are never guessed nor measured
here: they are those a caller passes, else the peaks `cudasmith device` cached for the device, else a
line saying that `cudasmith device` measures them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cudasmith.device import DevicePeaks, load_peaks
from cudasmith.hardware import Device, cpu_name, read_device
from cudasmith.runtime.arch import arch_name

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


def gpu_facts(device: Device) -> list[tuple[str, str]]:
    """A GPU's facts for a prompt, each with its unit (a fact the device does not report is left out)."""
    major, minor = device.capability or (0, 0)

    def count(value: int | None) -> str | None:
        return None if value is None else str(value)

    facts: list[tuple[str, str | None]] = [
        ("GPU", device.name),
        ("compute capability", f"{major}.{minor}; kernels are compiled for {arch_name(major, minor)}"),
        ("what it enables", capability_features(major, minor)),
        ("streaming multiprocessors (SMs)", count(device.sm_count)),
        ("warp size", count(device.warp_size)),
        ("max threads per SM", count(device.max_threads_per_sm)),
        ("max resident blocks per SM", count(device.max_blocks_per_sm)),
        ("shared memory per block", _size(device.shared_per_block)),
        ("shared memory per block (opt-in, dynamic)", _size(device.shared_per_block_optin)),
        ("shared memory per SM", _size(device.shared_per_sm)),
        ("32-bit registers per block", count(device.registers_per_block)),
        ("32-bit registers per SM", count(device.registers_per_sm)),
        ("L2 cache", _size(device.l2_bytes)),
        ("device memory", _size(device.memory_bytes)),
    ]
    if (peak := device.theoretical_memory_gb_per_s) is not None:
        facts.append(("DRAM bandwidth (theoretical: memory clock × bus width)", f"{peak:.0f} GB/s"))
    return [(label, value) for label, value in facts if value]


def cpu_facts(device: Device) -> list[tuple[str, str]]:
    """The processor's facts for a prompt."""
    caches = ", ".join(
        f"L{c.level} {_size(c.size_bytes)}" + (" per core" if c.per_core else " shared")
        for c in device.caches
    )
    facts = [
        ("CPU", cpu_name()),
        ("cores available", str(device.cores_available)),
        ("SIMD extensions", ", ".join(device.extensions)),
        ("caches", caches),
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
        gpu = read_device(device)
        facts = gpu_facts(gpu)
        name, target = gpu.name, arch_name(*(gpu.capability or (0, 0)))
        peaks_name: str | None = gpu.name
    else:
        facts, name, target, peaks_name = cpu_facts(read_device("cpu")), cpu_name(), None, None
    if measured is None:
        peaks = load_peaks(device, name=peaks_name)
        measured = peak_figures(peaks) if peaks is not None else None
    facts += measured_facts(measured) if measured is not None else [NOT_MEASURED]
    return Hardware(device, name, tuple(facts), target)
