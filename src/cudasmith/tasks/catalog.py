"""What a task is, for people and programs: its row in a listing, and its configs with sizes, work and
roofline figures (speed of light and the impossibility floor at a device's measured peaks).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from cudasmith.tasks.inputs import describe_config
from cudasmith.tasks.problem import Problem, load_module

if TYPE_CHECKING:
    from cudasmith.device import DevicePeaks

# What every task is timed against; a task's EXPERT adds itself (cudasmith.harness.baselines names them).
BASELINES = ("eager", "compile", "compile-max-autotune")


def level_of(name: str) -> str:
    """'level1' for 'level1/softmax', 'kernelbench/level1' for 'kernelbench/level1/19_ReLU'."""
    return name.rsplit("/", 1)[0] if "/" in name else ""


def in_level(name: str, level: str) -> bool:
    """Whether task `name` is in `level`: 'level1' holds level1/x and kernelbench/level1/x."""
    wanted, found = level.strip("/"), level_of(name)
    return found == wanted or found.endswith(f"/{wanted}")


def baselines(problem: Problem) -> list[str]:
    """What a candidate is timed against: eager PyTorch, torch.compile (two modes), and the EXPERT if any."""
    return [*BASELINES, *(["expert"] if problem.expert else [])]


def task_row(problem: Problem) -> dict[str, Any]:
    """One task as a listing shows it."""
    return {
        "name": problem.name,
        "level": level_of(problem.name),
        "dtype": problem.dtype,
        "configs": len(problem.configs),
        "hidden_configs": len(problem.hidden_configs),
        "validator": problem.has_validate,
        "expert": problem.expert,
        "baselines": baselines(problem),
        "l2_state": problem.l2_state,
        "description": problem.description,
    }


def level_counts(problems: Iterable[Problem]) -> dict[str, int]:
    """How many tasks each level holds, levels in name order."""
    return dict(sorted(Counter(level_of(p.name) for p in problems).items()))


def config_figures(problem: Problem, peaks: DevicePeaks | None = None) -> list[dict[str, Any]]:
    """Sizes, FLOPs, bytes moved and arithmetic intensity of every config, and with a device's measured
    peaks (cudasmith.device.DevicePeaks) its roofline: speed of light, floor and bound.

    Work is what verdicts use (cudasmith.harness.roofline.work_of): a problem's own flops() and
    bytes_moved() when it has them, else the FLOP counter's count of the reference and its inputs,
    parameters and outputs crossing memory once.
    """
    from cudasmith.harness.roofline import ConfigDescription, roofline, work_of

    module = load_module(problem.path, "problem")
    figures = []
    for index, (config, hidden) in enumerate(problem.all_configs()):
        described = describe_config(module, config)
        work = work_of(ConfigDescription(**described))
        figure: dict[str, Any] = {
            "index": index,
            "config": config,
            "hidden": hidden,
            **{k: described[k] for k in ("input_bytes", "output_bytes", "parameter_bytes") if k in described},
            "flops": None if work is None else int(work[0]),
            "bytes_moved": None if work is None else int(work[1]),
            "intensity": work[0] / work[1] if work and work[1] else None,
        }
        if "unknown" in described:
            figure["unknown"] = described["unknown"]
        point = None if peaks is None else roofline(ConfigDescription(**described), problem.dtype, peaks)
        if point is not None:
            figure.update(sol_ms=point.sol_ms, floor_ms=point.floor_ms, bound=point.bound)
        figures.append(figure)
    return figures


def task_details(problem: Problem, peaks: DevicePeaks | None = None) -> dict[str, Any]:
    """Everything `cudasmith show` prints: the listing row, tolerance, source and per-config figures."""
    import torch

    from cudasmith.harness.check import CALIBRATION_FACTOR, tolerance_for

    torch_dtype = getattr(torch, problem.dtype or "float32", None)
    floating = isinstance(torch_dtype, torch.dtype) and torch_dtype.is_floating_point
    return {
        **task_row(problem),
        "path": str(problem.path),
        "tolerance": tolerance_for(torch_dtype, problem.tolerance) if floating else None,
        "calibration_factor": CALIBRATION_FACTOR,
        "tolerance_overrides": problem.tolerance,
        "allowed_torch_ops": problem.allowed_torch_ops,
        "peaks": None if peaks is None else {"device": peaks.device, "measured_at": peaks.measured_at},
        "config_figures": config_figures(problem, peaks),
        "source": problem.source,
    }
