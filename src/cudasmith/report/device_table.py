"""A device's properties and measured speed of light, as a table in the terminal."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from cudasmith.device import DevicePeaks

# How each property is shown: its label and how its value is written.
PROPERTY_FORMATS = {
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


def _rates(rates: dict[str, float]) -> str:
    return ", ".join(f"{dtype} {value:.3g}" for dtype, value in rates.items()) or "not measured"


def print_device(
    properties: dict[str, Any], peaks: DevicePeaks | None, console: Console | None = None
) -> None:
    """Properties first, then the measured peaks (or how to measure them)."""
    console = console or Console()
    table = Table(show_edge=False, pad_edge=False, show_header=False)
    table.add_column("property", style="dim")
    table.add_column("value")
    for key, value in properties.items():
        label, fmt = PROPERTY_FORMATS.get(key, (key, str))
        table.add_row(label, fmt(value))
    console.print(table)
    if peaks is None:
        console.print(
            "[dim]speed of light not measured yet: `cudasmith device` measures it (a few seconds)[/]"
        )
        return
    measured = Table(show_edge=False, pad_edge=False, title="speed of light (measured)", title_justify="left")
    measured.add_column("what")
    measured.add_column("achieved", justify="right")
    detail = ", ".join(f"{kind} {value:.3g}" for kind, value in peaks.memory_detail_gb_per_s.items())
    measured.add_row("memory bandwidth", f"{peaks.memory_gb_per_s:.3g} GB/s ({detail})")
    measured.add_row("matrix units", f"{_rates(peaks.matrix_tflops)} TFLOP/s")
    measured.add_row("vector units", f"{_rates(peaks.vector_tflops)} TFLOP/s")
    measured.add_row("on-chip cache", f"{peaks.cache_bytes / 2**20:.0f} MiB")
    console.print(measured)
    versions = ", ".join(f"{k} {v}" for k, v in peaks.versions.items() if v)
    console.print(f"[dim]measured {peaks.measured_at} in {peaks.seconds:.1f} s with {versions}[/]")
