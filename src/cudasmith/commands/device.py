"""`cudasmith device`: the device's properties, its measured speed of light and its kernel launch cost."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from cudasmith.commands.common import command_device, working
from cudasmith.commands.options import DeviceOption, JsonOption
from cudasmith.errors import CudasmithError


def device_command(
    device: DeviceOption = None,
    as_json: JsonOption = False,
    remeasure: Annotated[bool, typer.Option("--remeasure", help="Measure again even when cached.")] = False,
    measure: Annotated[
        bool, typer.Option("--measure/--no-measure", help="Measure the peaks when none are cached.")
    ] = True,
    calibrate: Annotated[
        bool,
        typer.Option(
            "--calibrate/--no-calibrate",
            help="On a GPU, calibrate the kernel launch cost with Nsight Compute when it is not cached.",
        ),
    ] = True,
) -> None:
    """Show the device's properties and speed of light: memory bandwidth, FLOP rates per dtype.

    The peaks are measured here (a few seconds), once per device and software versions, and cached;
    every verdict's roofline and % of speed of light use them. On a GPU with Nsight Compute (ncu)
    installed, the GPU's cost of starting a kernel, which CUPTI's records leave out, is calibrated too
    (about a minute) and added to every GPU time from then on.

    Example: [bold]cudasmith device --json[/]
    """
    device = command_device(device, judging=False)  # first: a usage error comes before torch is imported

    from cudasmith.device import DevicePeaks, load_peaks
    from cudasmith.device.speed_of_light import ensure_peaks
    from cudasmith.hardware import read_device

    found = read_device(device)
    peaks: DevicePeaks | None
    if measure or remeasure:
        with working("measuring the device's speed of light…"):
            peaks = ensure_peaks(device, remeasure=remeasure)
    else:
        peaks = load_peaks(device)
    # Repeated measurements that disagree (a busy device) are used once, never cached.
    cached = peaks is not None and load_peaks(device) == peaks
    launch = _launch_cost(device, calibrate, remeasure) if device.startswith("cuda") else None
    if as_json:
        document = {
            "properties": found.properties(),
            "peaks": peaks.to_dict() if peaks else None,
            "peaks_cached": cached,
            "peaks_doubts": peaks.doubts() if peaks else [],
            "launch_cost": launch if isinstance(launch, str) or launch is None else launch.to_dict(),
        }
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return
    from cudasmith.report.device_table import print_device

    print_device(found, peaks, launch=launch, cached=cached)


def _launch_cost(device: str, calibrate: bool, remeasure: bool) -> Any:
    """The GPU's calibrated launch cost, or why there is none (a line for the table)."""
    import torch

    from cudasmith.device.launch_cost import ensure_launch_cost, find_ncu, load_launch_cost

    if device.startswith("cuda:"):
        torch.cuda.set_device(int(device.split(":")[1]))
    cached = None if remeasure else load_launch_cost()
    if cached is not None or not calibrate:
        return cached or "not cached; `cudasmith device --calibrate` calibrates it"
    if find_ncu() is None:
        return "Nsight Compute (ncu) is not installed here, so GPU times are bare CUPTI spans"
    try:
        with working("calibrating the kernel launch cost with Nsight Compute…"):
            return ensure_launch_cost(remeasure=True)
    except CudasmithError as exc:
        return f"{exc} (GPU times are bare CUPTI spans)"
