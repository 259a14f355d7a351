"""Names of the machine's processors, for verdicts and cache keys."""

from __future__ import annotations

import platform
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
    import os

    return f"{cpu_name()} ({os.cpu_count()} cores)"
