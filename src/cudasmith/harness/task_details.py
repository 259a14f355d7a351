"""A task as the judge sees it, for `cudasmith show`: its tolerance, and its configs with sizes, work and
roofline figures (speed of light and the impossibility floor at a device's measured peaks).
"""

from __future__ import annotations

from typing import Any

import torch

from cudasmith.device import DevicePeaks
from cudasmith.harness.roofline import roofline, work_of
from cudasmith.harness.wire.results import ConfigDescription
from cudasmith.harness.workers.check import CALIBRATION_FACTOR, tolerance_for
from cudasmith.tasks.catalog import task_row
from cudasmith.tasks.hidden import hidden_summary
from cudasmith.tasks.inputs import describe_config
from cudasmith.tasks.problem import Problem, load_module


def config_figures(problem: Problem, peaks: DevicePeaks | None = None) -> list[dict[str, Any]]:
    """Sizes, FLOPs, bytes moved and arithmetic intensity of every public config, and with a device's
    measured peaks (cudasmith.device.DevicePeaks) its roofline: speed of light, floor and bound. Hidden
    configs have none: their figures would give their shapes away (tasks.hidden says how many there are).

    Work is what verdicts use (cudasmith.harness.roofline.work_of): a problem's own flops() and
    bytes_moved() when it has them, else the FLOP counter's count of the reference and its inputs,
    parameters and outputs crossing memory once.
    """
    module = load_module(problem.path, "problem")
    figures = []
    for index, config in enumerate(problem.configs):
        described = describe_config(module, config)
        description = ConfigDescription(**described)
        work = work_of(description)
        figure: dict[str, Any] = {
            "index": index,
            "config": config,
            **{k: described[k] for k in ("input_bytes", "output_bytes", "parameter_bytes") if k in described},
            "flops": None if work is None else int(work[0]),
            "bytes_moved": None if work is None else int(work[1]),
            "intensity": work[0] / work[1] if work and work[1] else None,
        }
        if "unknown" in described:
            figure["unknown"] = described["unknown"]
        point = None if peaks is None else roofline(description, problem.dtype, peaks)
        if point is not None:
            figure.update(sol_ms=point.sol_ms, floor_ms=point.floor_ms, bound=point.bound)
        figures.append(figure)
    return figures


def task_details(problem: Problem, peaks: DevicePeaks | None = None) -> dict[str, Any]:
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
