"""Whether a timing window was exclusive: after each window, what else ran on the device during it.

A window is timed while the other workers of the device's sessions are drained and paused (harness/lease.py);
this module checks afterwards rather than trusting that. On the CPU, /proc says how much CPU time every
other process of the sessions used during the window. On the GPU, NVML's per-process utilisation samples
say which processes ran kernels or moved memory; any process but the timed one counts, except the judge's
own workers, whose requests were drained and which synchronise before they answer. Where NVML is not
installed (pynvml) or not supported, the window is drained and paused but not verified, and says so.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from cudasmith.hardware import nvml_gpu

# CPU time other processes may use in a window before it counts as shared: two clock ticks, for the
# bookkeeping of being stopped and continued.
OTHER_CPU_TOLERANCE_S = 0.02
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# NVML's samples carry the host's wall clock in microseconds; samples further than this from ours
# mean the clocks differ, and the check cannot place them in the window.
NVML_CLOCK_SKEW_S = 60.0
# The driver's utilisation sampling period (NVML documents 1/6 s to 1 s by product): a sample that ends
# this long after a process stopped may still show its work, so a window starts this long after the
# other workers' last GPU work (a window flagged for work from before it is timed again).
NVML_PERIOD_S = 1 / 6


@dataclass
class WindowCheck:
    """What ran beside one timing window: `shared` when another process did; `others` names them."""

    shared: bool
    verified: bool
    others: list[str] = field(default_factory=list)


class ActivityProbe(Protocol):
    """Checks one window: `begin()` before it, `check()` after it."""

    verified: bool
    # How windows are checked, in a sentence a verdict can show.
    how: str

    def begin(self, watched: list[int]) -> Any: ...

    def check(self, mark: Any, timed: set[int], watched: list[int], trusted: set[int]) -> WindowCheck: ...

    # How long a process's earlier work can still show in the samples after it stopped (0: none).
    def settle_s(self) -> float: ...


def cpu_seconds(pids: Iterable[int]) -> dict[int, float]:
    """CPU time (user and system) each live process has used so far, from /proc."""
    found = {}
    for pid in pids:
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = Path(f"/proc/{pid}/stat").read_text()
            fields = stat[stat.rfind(")") + 2 :].split()
            found[pid] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return found


class CpuActivity:
    """On the CPU: the CPU time of every other process of the sessions across the window."""

    verified = True
    how = "verified from /proc: no other process of the judge's sessions used CPU time in any window"

    def begin(self, watched: list[int]) -> dict[int, float]:
        return cpu_seconds(watched)

    def check(
        self, mark: dict[int, float], timed: set[int], watched: list[int], trusted: set[int]
    ) -> WindowCheck:
        after = cpu_seconds(watched)
        used = {pid: seconds - mark.get(pid, 0.0) for pid, seconds in after.items() if pid not in timed}
        busy = {pid: seconds for pid, seconds in used.items() if seconds > 0}
        if sum(busy.values()) <= OTHER_CPU_TOLERANCE_S:
            return WindowCheck(False, True)
        others = [f"pid {pid} ({seconds:.2f} s of CPU)" for pid, seconds in sorted(busy.items())]
        return WindowCheck(True, True, others)

    def settle_s(self) -> float:
        return 0.0


class Unverified:
    """On a GPU without NVML's process samples: windows drained and paused, not checked."""

    verified = False

    def __init__(self, why: str) -> None:
        self.how = f"not verified ({why}); the other workers were drained and paused in every window"

    def begin(self, watched: list[int]) -> None:
        return None

    def check(self, mark: Any, timed: set[int], watched: list[int], trusted: set[int]) -> WindowCheck:
        return WindowCheck(False, False)

    def settle_s(self) -> float:
        return 0.0


class GpuActivity:
    """On the GPU: NVML's per-process utilisation samples taken during the window."""

    verified = True
    how = "verified by NVML's per-process utilisation: no other process ran on the GPU in any window"

    def __init__(self, nvml: Any, handle: Any) -> None:
        """`nvml`: the pynvml module (initialised); `handle`: the session's GPU."""
        self._nvml = nvml
        self._handle = handle

    def _samples(self, since_us: int) -> list[Any]:
        try:
            return list(self._nvml.nvmlDeviceGetProcessUtilization(self._handle, since_us))
        except self._nvml.NVMLError as error:
            if getattr(error, "value", None) == self._nvml.NVML_ERROR_NOT_FOUND:
                return []  # no process had any utilisation since then
            raise

    def begin(self, watched: list[int]) -> int:
        return int(time.time() * 1e6)

    def check(self, mark: int, timed: set[int], watched: list[int], trusted: set[int]) -> WindowCheck:
        now_us = int(time.time() * 1e6)
        samples = self._samples(mark)
        if any(abs(sample.timeStamp - now_us) > NVML_CLOCK_SKEW_S * 1e6 for sample in samples):
            return WindowCheck(False, False, ["NVML's timestamps are not this host's wall clock"])
        others = sorted(
            {
                f"pid {sample.pid} (SM {sample.smUtil} %, memory {sample.memUtil} %)"
                for sample in samples
                if sample.pid not in timed
                and sample.pid not in trusted
                and (sample.smUtil > 0 or sample.memUtil > 0)
            }
        )
        return WindowCheck(bool(others), True, others)

    def settle_s(self) -> float:
        return NVML_PERIOD_S


def gpu_probe(*names: str) -> ActivityProbe:
    """The probe of one GPU, by the first of its names NVML knows (its UUID, GPU-…, or NVML index): NVML's
    per-process samples where pynvml can read them."""
    failure: Exception | None = None
    for name in names:
        try:
            probe = GpuActivity(*nvml_gpu(name))
            probe._samples(int(time.time() * 1e6))  # per-process samples are supported here
            return probe
        except ImportError:
            return Unverified("pynvml is not installed")
        except Exception as exc:  # NVML missing, old driver, unsupported device: the next name, or why not
            failure = exc
    why = f"{type(failure).__name__}: {failure}" if failure is not None else "no GPU named"
    return Unverified(f"NVML's per-process samples are not available: {why}")
