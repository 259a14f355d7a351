"""The GPU's own cost of starting a kernel: counted by Nsight Compute, left out of CUPTI's kernel records.

CUPTI's record of a kernel runs from when its first thread block starts to when its last one ends.
Nsight Compute's `gpu__time_duration` also counts the front end setting the grid up and the memory
flush when it completes: on an H200, an empty kernel reads 0.6 µs in CUPTI and 1.3-1.4 µs in Nsight
Compute, and the difference is the same for kernels of 2 µs to 1 ms. That constant is part of what a
kernel costs in a program (the next kernel on the stream waits for it), and leaving it out reads a
2.4 µs kernel as 1.4 µs, inflating the speedups of short kernels.

So a call's time is its CUPTI span plus this launch cost, once: the launches of its later kernels lie
inside the span, in the gaps between its kernels. The cost is calibrated per device and software
versions by `cudasmith device` where Nsight Compute (`ncu`) is installed: ncu's median time of an
empty kernel minus the CUPTI median of the same kernel timed by the protocol. Where it was never
calibrated, times are the bare CUPTI spans and the measurement's method says so ("cupti", not
"cupti+launch").

    python -m cudasmith.device.launch_cost --launch   # the program ncu profiles (launches the kernel)
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cudasmith.device import LAUNCH_COST_PURPOSE, measurement_path, software_versions
from cudasmith.errors import CudasmithError
from cudasmith.jsontypes import JsonDict
from cudasmith.runtime import compile_cuda
from cudasmith.runtime.cache import write_atomically
from cudasmith.runtime.seal import seal, unseal
from cudasmith.timestamps import now_iso

KERNEL = "cudasmith_calibrate_empty"
SOURCE = f'extern "C" __global__ void {KERNEL}() {{}}\n'
# Launches profiled by ncu (each timed alone, caches flushed, clocks left alone); their median counts.
NCU_LAUNCHES = 30
NCU_TIMEOUT_S = 180.0
NCU_PATHS = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu")
NCU_UNITS_MS = {
    "ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3,
    "ms": 1.0, "msecond": 1.0, "s": 1e3, "second": 1e3,
}  # fmt: skip


@dataclass(frozen=True)
class LaunchCost:
    """One device's calibrated launch cost, in microseconds, and what it came from."""

    device: str
    launch_us: float
    ncu_empty_us: float
    cupti_empty_us: float
    versions: dict[str, str | None] = field(default_factory=dict)
    measured_at: str = ""

    def to_dict(self) -> JsonDict:
        """The JSON form (the cache file's content)."""
        return asdict(self)


def find_ncu() -> str | None:
    """Nsight Compute's command-line profiler, or None."""
    return shutil.which("ncu") or next((p for p in NCU_PATHS if Path(p).is_file()), None)


def parse_ncu_csv(text: str) -> dict[str, list[float]]:
    """gpu__time_duration.sum values per kernel name (without its parameter list), in ms, from `ncu --csv`."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return {}
    durations: dict[str, list[float]] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        name = row["Kernel Name"].split("(")[0].strip()
        value = float(row["Metric Value"].replace(",", ""))
        durations.setdefault(name, []).append(value * NCU_UNITS_MS.get(row.get("Metric Unit", "ns"), 1e-6))
    return durations


def ncu_times(command: list[str], kernel_regex: str, timeout_s: float) -> dict[str, list[float]]:
    """Run `command` under ncu (cold caches, clocks left alone): each matching kernel's times in ms."""
    ncu = find_ncu()
    if ncu is None:
        raise CudasmithError("Nsight Compute (ncu) is not installed here")
    with tempfile.TemporaryDirectory() as directory:
        log_file = Path(directory) / "ncu.csv"
        profiled = [
            ncu, "--clock-control", "none", "--cache-control", "all", "--metrics", "gpu__time_duration.sum",
            "--csv", "--kernel-name", f"regex:{kernel_regex}", "--log-file", str(log_file), *command,
        ]  # fmt: skip
        try:
            done = subprocess.run(profiled, capture_output=True, text=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            raise CudasmithError(f"ncu took longer than {timeout_s:.0f} s") from None
        text = log_file.read_text() if log_file.is_file() else ""
        found = parse_ncu_csv(text)
        if done.returncode != 0 or not found:
            tail = " | ".join((done.stderr + done.stdout + text).strip().splitlines()[-3:])[:300]
            raise CudasmithError(f"ncu exited with {done.returncode} and no times: {tail}")
        return found


def cost_path(name: str, versions: dict[str, str | None]) -> Path:
    """The cache file of one GPU's launch cost (keyed like its peaks: device.PEAK_VERSION_KEYS)."""
    return measurement_path("launch-", name, versions)


_loaded: dict[str, LaunchCost | None] = {}


def load_launch_cost(name: str | None = None) -> LaunchCost | None:
    """The calibrated launch cost of a GPU (this process's current one by default); None if never calibrated."""
    if name is None:
        import torch

        name = torch.cuda.get_device_name()
    if name not in _loaded:
        try:
            data = unseal(json.loads(cost_path(name, software_versions()).read_text()), LAUNCH_COST_PURPOSE)
            _loaded[name] = (
                LaunchCost(**data) if data is not None else None
            )  # failing its MAC: calibrate again
        except (OSError, ValueError, TypeError):
            _loaded[name] = None
    return _loaded[name]


def calibrated_launch_us(name: str | None = None) -> float | None:
    """The launch cost a timing plan adds to GPU times here (µs), None where it was never calibrated."""
    cost = load_launch_cost(name)
    return cost.launch_us if cost is not None else None


def save_launch_cost(cost: LaunchCost) -> Path:
    path = cost_path(cost.device, cost.versions)
    write_atomically(path, json.dumps(seal(cost.to_dict(), LAUNCH_COST_PURPOSE), indent=2).encode())
    _loaded[cost.device] = cost
    return path


def _launcher() -> Any:
    kernel = compile_cuda(SOURCE, KERNEL)
    return lambda _index: kernel(grid=1, block=32)


def measure_launch_cost(timeout_s: float = NCU_TIMEOUT_S) -> LaunchCost:
    """Calibrate on this machine's current GPU (tens of seconds; needs ncu); cached by `ensure_launch_cost`."""
    # torch and the timer are imported here, not above: reading a stored cost needs neither.
    import torch

    from cudasmith.timing.measure import measure
    from cudasmith.timing.protocol import default_plan

    program = [sys.executable, "-m", "cudasmith.device.launch_cost", "--launch"]
    ncu_ms = ncu_times(program, f"^{KERNEL}$", timeout_s).get(KERNEL)
    if not ncu_ms:
        raise CudasmithError("ncu reported no time for the calibration kernel")
    bare = measure(_launcher(), 1, "cuda", default_plan("cuda"))
    if not bare.method.startswith("cupti"):
        raise CudasmithError(f"CUPTI did not time the calibration kernel ({bare.method}): {bare.warnings}")
    cupti_ms = statistics.median(bare.samples_ms)
    return LaunchCost(
        device=torch.cuda.get_device_name(),
        launch_us=max(0.0, statistics.median(ncu_ms) - cupti_ms) * 1e3,
        ncu_empty_us=statistics.median(ncu_ms) * 1e3,
        cupti_empty_us=cupti_ms * 1e3,
        versions=software_versions(),
        measured_at=now_iso(),
    )


def ensure_launch_cost(remeasure: bool = False) -> LaunchCost:
    """The current GPU's launch cost from the cache, calibrated and cached when absent."""
    cached = None if remeasure else load_launch_cost()
    if cached is not None:
        return cached
    cost = measure_launch_cost()
    save_launch_cost(cost)
    return cost


def main() -> None:
    parser = argparse.ArgumentParser(
        description="The program Nsight Compute profiles to calibrate the launch cost."
    )
    parser.add_argument("--launch", action="store_true", help="launch the empty kernel NCU_LAUNCHES times")
    args = parser.parse_args()
    if not args.launch:
        parser.error("nothing to do: this module is run by `cudasmith device`, with --launch")
    import torch

    launch = _launcher()
    for _ in range(NCU_LAUNCHES):
        launch(0)
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
