"""A device's properties and measured speed of light, as a table in the terminal."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console

from cudasmith.device import DevicePeaks
from cudasmith.device.launch_cost import LaunchCost
from cudasmith.device.speed_of_light import PEAKS_NOISY_SPREAD
from cudasmith.hardware import Device
from cudasmith.report.formats import output_console, plain_table, titled

# How each property is shown: its label and how its value is written.
PROPERTY_FORMATS: dict[str, tuple[str, Callable[[Any], str]]] = {
    "name": ("name", str),
    "compute_capability": ("compute capability", str),
    "sm_count": ("SMs", str),
    "max_sm_clock_mhz": ("max SM clock", lambda v: f"{v:.0f} MHz"),
    "l2_bytes": ("L2 cache", lambda v: f"{v / 2**20:.0f} MiB"),
    "memory_bytes": ("memory", lambda v: f"{v / 2**30:.1f} GiB"),
    "memory_clock_mhz": ("memory clock", lambda v: f"{v:.0f} MHz"),
    "memory_bus_bits": ("memory bus", lambda v: f"{v} bits"),
    "theoretical_memory_gb_per_s": ("memory bandwidth (datasheet)", lambda v: f"{v:.0f} GB/s"),
    "cores": ("cores", str),
    "last_level_cache_bytes": ("last-level cache", lambda v: f"{v / 2**20:.0f} MiB"),
    "machine": ("architecture", str),
}


def print_device(
    device: Device,
    peaks: DevicePeaks | None,
    console: Console | None = None,
    launch: LaunchCost | str | None = None,
    cached: bool = True,
) -> None:
    """Properties first, then the measured peaks (or how to measure them) and the launch cost.

    `launch`: the calibrated launch cost, or why there is none (GPU only); `cached`: False when the
    peaks' repeated measurements disagreed, so that they were not kept for verdicts. Rates the device
    cannot have measured undisturbed (DevicePeaks.doubts) are flagged.
    """
    console = console or output_console()
    table = plain_table(show_header=False)
    table.add_column("property", style="dim")
    table.add_column("value")
    for key, value in device.properties().items():
        label, fmt = PROPERTY_FORMATS.get(key, (key, str))
        table.add_row(label, fmt(value))
    console.print(table)
    if peaks is None:
        console.print(
            "[dim]speed of light not measured yet: `cudasmith device` measures it (a few seconds)[/]"
        )
    else:
        detail = ", ".join(f"{kind} {value:.3g}" for kind, value in peaks.memory_detail_gb_per_s.items())
        console.print(f"\nmemory bandwidth (measured): {peaks.memory_gb_per_s:.3g} GB/s ({detail})")
        console.print(f"on-chip cache: {peaks.cache_bytes / 2**20:.0f} MiB")
        rates = plain_table()
        rates.add_column("dtype")
        rates.add_column("matrix units", justify="right")
        rates.add_column("vector units", justify="right")
        for dtype in dict.fromkeys([*peaks.matrix_tflops, *peaks.vector_tflops]):
            cells = [table_.get(dtype) for table_ in (peaks.matrix_tflops, peaks.vector_tflops)]
            rates.add_row(dtype, *("–" if c is None else f"{c:.3g} TFLOP/s" for c in cells))
        console.print(titled("FLOP rates (measured)", rates))
        versions = ", ".join(f"{k} {v}" for k, v in peaks.versions.items() if v)
        console.print(f"[dim]measured {peaks.measured_at} in {peaks.seconds:.1f} s with {versions}[/]")
        doubtful = peaks.doubts()
        for doubt in doubtful:
            console.print(
                f"[yellow]doubtful: {doubt} (other work disturbed the measurement): a % SOL of matrix work "
                "is inflated; `cudasmith device --remeasure` measures again[/]"
            )
        if not cached and not doubtful:
            console.print(
                f"[yellow]not cached: the repeated measurements disagreed by more than "
                f"{PEAKS_NOISY_SPREAD:.0%} (something else was using the device); measured again next time[/]"
            )
    if isinstance(launch, LaunchCost):
        console.print(
            f"\nkernel launch cost (added to CUPTI spans): {launch.launch_us:.2f} µs = Nsight Compute "
            f"{launch.ncu_empty_us:.2f} µs − CUPTI {launch.cupti_empty_us:.2f} µs on an empty kernel"
        )
    elif launch:
        console.print(f"\n[dim]kernel launch cost not calibrated: {launch}[/]")
