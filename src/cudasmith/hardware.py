"""The machine's processors: their names, for verdicts and cache keys, what the CUDA driver says of a GPU,
and every fact of a device in one `Device`, read once."""

from __future__ import annotations

import ctypes
import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any


@cache
def cpu_name() -> str:
    """The processor's model name, e.g. 'AMD EPYC 9454 48-Core Processor'."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_name(device: str) -> str:
    """What a verdict calls the device: the GPU's name, or the CPU's with its core count."""
    if device.startswith("cuda"):
        import torch

        return torch.cuda.get_device_name(torch.device(device))
    return f"{cpu_name()} ({os.cpu_count()} cores)"


def no_gpu_here() -> bool:
    """Whether this process can tell, without torch, that it has no GPU: CUDA_VISIBLE_DEVICES hides every
    one, or there is no CUDA driver to load. False: only torch (or the driver, initialised) can tell."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") in ("", "-1"):
        return True
    try:  # loading the library initialises nothing: no context, nothing a later fork or torch minds
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return True
    return False


def driver_gpu_count() -> int | None:
    """How many GPUs the CUDA driver sees (0 where there is no driver or it fails); None without
    cuda-python, where only torch can tell."""
    try:
        from cuda.bindings import driver
    except ImportError:
        return None
    try:
        if int(driver.cuInit(0)[0]) != 0:
            return 0
        error, count = driver.cuDeviceGetCount()
        return int(count) if int(error) == 0 else 0
    except Exception:  # a driver library that does not load
        return 0


def driver_attributes(index: int, wanted: Mapping[str, str]) -> dict[str, int]:
    """What the CUDA driver says of GPU `index`: each of `wanted` (our key: a CU_DEVICE_ATTRIBUTE_ name) it
    answers; empty without cuda-python or a driver. Torch does not report these."""
    try:
        # Imported here: cuda-python is optional (the cuda extra), and loading it loads the driver.
        from cuda.bindings import driver

        driver.cuInit(0)
        error, device = driver.cuDeviceGet(index)
        if int(error) != 0:
            return {}
        found = {}
        for key, name in wanted.items():
            error, value = driver.cuDeviceGetAttribute(getattr(driver.CUdevice_attribute, name), device)
            if int(error) == 0:
                found[key] = int(value)
        return found
    except Exception:  # no cuda-python, no driver, or an attribute this driver does not know
        return {}


# What the CUDA driver says beside torch's properties: clocks, the memory bus, and the limits a kernel
# writer plans occupancy with (the driver's words for them).
GPU_ATTRIBUTES = {
    "sm_clock_khz": "CU_DEVICE_ATTRIBUTE_CLOCK_RATE",
    "memory_clock_khz": "CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE",
    "memory_bus_bits": "CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH",
    "registers_per_block": "CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK",
    "registers_per_sm": "CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR",
    "shared_per_block_optin": "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
    "max_blocks_per_sm": "CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR",
}
# CPU instruction-set extensions worth a kernel writer's attention, as /proc/cpuinfo names them.
CPU_EXTENSIONS = (
    "sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
    "avx512_fp16", "amx_tile", "amx_bf16", "asimd", "asimddp", "sve", "sve2",
)  # fmt: skip
CPU_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")


@dataclass(frozen=True)
class CpuCache:
    """One data (or unified) cache level of the CPU: its size, and whether each core has its own."""

    level: int
    size_bytes: int
    per_core: bool


@dataclass(frozen=True)
class Device:
    """One device's facts, read once from the device itself (`read_device`): torch's properties and the
    CUDA driver's attributes for a GPU, /proc and /sys for the CPU. A fact the device does not report is
    None (an older driver, no cuda-python). Measured figures are not facts of this kind: DevicePeaks."""

    device: str
    name: str
    memory_bytes: int
    # The CPU's.
    cores: int | None = None
    cores_available: int | None = None
    machine: str | None = None
    caches: tuple[CpuCache, ...] = ()
    extensions: tuple[str, ...] = ()
    # The GPU's: torch's properties, then the driver's attributes.
    capability: tuple[int, int] | None = None
    sm_count: int | None = None
    warp_size: int | None = None
    max_threads_per_sm: int | None = None
    l2_bytes: int | None = None
    shared_per_block: int | None = None
    shared_per_block_optin: int | None = None
    shared_per_sm: int | None = None
    registers_per_block: int | None = None
    registers_per_sm: int | None = None
    max_blocks_per_sm: int | None = None
    sm_clock_khz: int | None = None
    memory_clock_khz: int | None = None
    memory_bus_bits: int | None = None

    @property
    def kind(self) -> str:
        """'cuda' or 'cpu'."""
        return "cuda" if self.device.startswith("cuda") else "cpu"

    @property
    def cache_bytes(self) -> int:
        """Bytes that may stay on chip: the GPU's L2, or the CPU's largest (last-level) cache."""
        if self.kind == "cuda":
            return self.l2_bytes or 0
        return max((cache.size_bytes for cache in self.caches), default=0)

    def properties(self) -> dict[str, str | int | float]:
        """What `cudasmith device` shows of it, each number with its unit in its key."""
        if self.kind == "cpu":
            return {
                "name": self.name,
                "cores": self.cores or 0,
                "last_level_cache_bytes": self.cache_bytes,
                "memory_bytes": self.memory_bytes,
                "machine": self.machine or "",
            }
        major, minor = self.capability or (0, 0)
        found: dict[str, str | int | float] = {
            "name": self.name,
            "compute_capability": f"{major}.{minor}",
            "sm_count": self.sm_count or 0,
            "l2_bytes": self.cache_bytes,
            "memory_bytes": self.memory_bytes,
        }
        # Where the driver does not say (an older one, or no cuda-python), the table shows less.
        if self.sm_clock_khz:
            found["max_sm_clock_mhz"] = self.sm_clock_khz / 1e3
        if self.memory_clock_khz and self.memory_bus_bits and self.theoretical_memory_gb_per_s:
            found["memory_clock_mhz"] = self.memory_clock_khz / 1e3
            found["memory_bus_bits"] = self.memory_bus_bits
            found["theoretical_memory_gb_per_s"] = self.theoretical_memory_gb_per_s
        return found

    @property
    def theoretical_memory_gb_per_s(self) -> float | None:
        """The datasheet's DRAM bandwidth: double data rate (two transfers per memory clock) over the whole
        bus; None where the driver does not say."""
        if not self.memory_clock_khz or not self.memory_bus_bits:
            return None
        return 2 * self.memory_clock_khz * 1e3 * self.memory_bus_bits / 8 / 1e9


def _cpu_caches() -> tuple[CpuCache, ...]:
    """The data and unified caches of the first core, from /sys (none where the OS does not say)."""
    found = []
    for index in sorted(CPU_CACHES.glob("index*")):
        try:
            level, kind, size = ((index / name).read_text().strip() for name in ("level", "type", "size"))
        except OSError:
            continue
        if kind == "Instruction":
            continue
        scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(size[-1:].upper(), 1)
        found.append(CpuCache(int(level), int(size.rstrip("KMGkmg") or 0) * scale, level in ("1", "2")))
    return tuple(found)


def _cpu_extensions() -> tuple[str, ...]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return ()
    flags = next(
        (
            line.split(":", 1)[1].split()
            for line in text.splitlines()
            if line.startswith(("flags", "Features"))
        ),
        [],
    )
    return tuple(flag for flag in CPU_EXTENSIONS if flag in flags)


def _cpu_memory_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def gpu_device(device: str, props: Any, driver: Mapping[str, int]) -> Device:
    """A GPU's facts from torch's device properties and the driver's attributes (GPU_ATTRIBUTES; either
    may lack fields: an older torch, an older driver, no cuda-python)."""

    def known(value: Any) -> int | None:
        return int(value) if value else None

    return Device(
        device=device,
        name=props.name,
        memory_bytes=int(getattr(props, "total_memory", 0)),
        capability=(props.major, props.minor),
        sm_count=known(props.multi_processor_count),
        warp_size=known(getattr(props, "warp_size", 32)),
        max_threads_per_sm=known(getattr(props, "max_threads_per_multi_processor", None)),
        l2_bytes=known(getattr(props, "L2_cache_size", None)),
        shared_per_block=known(getattr(props, "shared_memory_per_block", None)),
        shared_per_block_optin=known(
            getattr(props, "shared_memory_per_block_optin", None) or driver.get("shared_per_block_optin")
        ),
        shared_per_sm=known(getattr(props, "shared_memory_per_multiprocessor", None)),
        registers_per_block=known(driver.get("registers_per_block")),
        registers_per_sm=known(
            getattr(props, "regs_per_multiprocessor", None) or driver.get("registers_per_sm")
        ),
        max_blocks_per_sm=known(driver.get("max_blocks_per_sm")),
        sm_clock_khz=known(driver.get("sm_clock_khz")),
        memory_clock_khz=known(getattr(props, "memory_clock_rate", None) or driver.get("memory_clock_khz")),
        memory_bus_bits=known(getattr(props, "memory_bus_width", None) or driver.get("memory_bus_bits")),
    )


@cache
def read_device(device: str) -> Device:
    """The facts of `device` ('cpu', or a GPU that torch sees: 'cuda', 'cuda:N'), read once per process."""
    if not device.startswith("cuda"):
        affinity = getattr(os, "sched_getaffinity", None)
        return Device(
            device="cpu",
            name=device_name("cpu"),
            memory_bytes=_cpu_memory_bytes(),
            cores=os.cpu_count(),
            cores_available=len(affinity(0)) if affinity else os.cpu_count(),
            machine=platform.machine(),
            caches=_cpu_caches(),
            extensions=_cpu_extensions(),
        )
    import torch

    torch_device = torch.device(device)
    index = torch_device.index if torch_device.index is not None else torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    return gpu_device(f"cuda:{index}", props, driver_attributes(index, GPU_ATTRIBUTES))


def nvml_gpu(name: str) -> tuple[Any, Any]:
    """NVML (the pynvml module, initialised) and its handle of one GPU, by NVML index or UUID (GPU-…,
    MIG-…) as CUDA_VISIBLE_DEVICES names it. ImportError without pynvml; pynvml's errors where NVML or
    the GPU is not there. The one place cudasmith opens NVML (utilisation sampling, exclusive windows)."""
    import pynvml

    pynvml.nvmlInit()
    if name.startswith(("GPU-", "MIG-")):
        return pynvml, pynvml.nvmlDeviceGetHandleByUUID(name)
    return pynvml, pynvml.nvmlDeviceGetHandleByIndex(int(name))
