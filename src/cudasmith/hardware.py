"""The machine's processors: their names, for verdicts and cache keys, and what the CUDA driver says of a GPU."""

from __future__ import annotations

import ctypes
import os
import platform
from collections.abc import Mapping
from functools import cache
from pathlib import Path


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
