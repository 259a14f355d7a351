"""A task as the judge sees it, for `cudasmith show`: its tolerance, and its configs with sizes, work and
roofline figures (speed of light and the impossibility floor at a device's measured peaks).
"""

from __future__ import annotations

from typing import TypedDict

import torch

from cudasmith.device import DevicePeaks
from cudasmith.harness.wire.results import ConfigDescription
from cudasmith.harness.witnesses.roofline import roofline, work_of
from cudasmith.harness.workers.check import CALIBRATION_FACTOR, tolerance_for
from cudasmith.tasks.catalog import TaskRow, task_row
from cudasmith.tasks.hidden import hidden_summary
from cudasmith.tasks.inputs import describe_config
from cudasmith.tasks.problem import Config, Problem, load_module


class ConfigFigures(TypedDict, total=False):
    """One public config's sizes and work, and with a device's peaks its roofline (`show --json`)."""

    index: int
    config: Config
    input_bytes: int
    parameter_bytes: int
    output_bytes: int
    flops: int | None
    bytes_moved: int | None
    intensity: float | None
    # Why the reference could not run on meta tensors (only what the problem declares is known).
    unknown: str
    sol_ms: float
    floor_ms: float
    bound: str


class PeaksSeen(TypedDict):
    """Which device's measured peaks the roofline figures use, and when they were measured."""

    device: str
    measured_at: str


class TaskDetails(TaskRow):
    """Everything `cudasmith show` prints of a task."""

    hidden: str | None
    path: str
    tolerance: dict[str, float] | None
    calibration_factor: float
    tolerance_overrides: dict[str, dict[str, float]]
    allowed_torch_ops: str | tuple[str, ...]
    peaks: PeaksSeen | None
    config_figures: list[ConfigFigures]
    source: str


def config_figures(problem: Problem, peaks: DevicePeaks | None = None) -> list[ConfigFigures]:
    """Sizes, FLOPs, bytes moved and arithmetic intensity of every public config, and with a device's
    measured peaks (cudasmith.device.DevicePeaks) its roofline: speed of light, floor and bound. Hidden
    configs have none: their figures would give their shapes away (tasks.hidden says how many there are).

    Work is what verdicts use (cudasmith.harness.witnesses.roofline.work_of): a problem's own flops() and
    bytes_moved() when it has them, else the FLOP counter's count of the reference and its inputs,
    parameters and outputs crossing memory once.
    """
    module = load_module(problem.path, "problem")
    figures = []
    for index, config in enumerate(problem.configs):
        described = describe_config(module, config)
        description = ConfigDescription(**described)
        work = work_of(description)
        figure = ConfigFigures(index=index, config=config)
        if "input_bytes" in described:
            figure["input_bytes"] = described["input_bytes"]
        if "output_bytes" in described:
            figure["output_bytes"] = described["output_bytes"]
        if "parameter_bytes" in described:
            figure["parameter_bytes"] = described["parameter_bytes"]
        figure["flops"] = None if work is None else int(work[0])
        figure["bytes_moved"] = None if work is None else int(work[1])
        figure["intensity"] = work[0] / work[1] if work and work[1] else None
        if "unknown" in described:
            figure["unknown"] = described["unknown"]
        point = None if peaks is None else roofline(description, problem.dtype, peaks)
        if point is not None:
            figure["sol_ms"], figure["floor_ms"], figure["bound"] = point.sol_ms, point.floor_ms, point.bound
        figures.append(figure)
    return figures


def task_details(problem: Problem, peaks: DevicePeaks | None = None) -> TaskDetails:
    """Everything `cudasmith show` prints: the listing row, tolerance, source and per-config figures."""
    torch_dtype = getattr(torch, problem.dtype or "float32", None)
    floating = torch_dtype if isinstance(torch_dtype, torch.dtype) and torch_dtype.is_floating_point else None
    return {
        **task_row(problem),
        "hidden": hidden_summary(problem),
        "path": str(problem.path),
        "tolerance": tolerance_for(floating, problem.tolerance) if floating is not None else None,
        "calibration_factor": CALIBRATION_FACTOR,
        "tolerance_overrides": problem.tolerance,
        "allowed_torch_ops": problem.allowed_torch_ops,
        "peaks": None if peaks is None else {"device": peaks.device, "measured_at": peaks.measured_at},
        "config_figures": config_figures(problem, peaks),
        "source": problem.source,
    }
