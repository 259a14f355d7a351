"""What a task is, for people and programs: its row in a listing, and its configs with sizes and roofline
figures (the time floor max(FLOPs / peak FLOP rate, bytes / memory bandwidth) when peaks are given).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cudasmith.tasks.inputs import describe_config
from cudasmith.tasks.problem import Problem, load_module

EAGER = "eager"


@dataclass(frozen=True)
class Peaks:
    """A device's peak FLOP rate for the task's dtype and its memory bandwidth; either may be unknown."""

    flops_per_s: float | None = None
    bytes_per_s: float | None = None

    def floor_s(self, flops: int, bytes_moved: int) -> float | None:
        """The roofline's time floor: no kernel can do `flops` and move `bytes_moved` faster."""
        terms = [
            amount / rate
            for amount, rate in ((flops, self.flops_per_s), (bytes_moved, self.bytes_per_s))
            if rate
        ]
        return max(terms) if terms else None


def level_of(name: str) -> str:
    """'level1' for 'level1/softmax', 'kernelbench/level1' for 'kernelbench/level1/19_ReLU'."""
    return name.rsplit("/", 1)[0] if "/" in name else ""


def baselines(problem: Problem) -> list[str]:
    """What a candidate is timed against: eager PyTorch, and the task's expert implementation if any."""
    return [EAGER] + ([f"expert ({problem.expert})"] if problem.expert else [])


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


def config_figures(problem: Problem, peaks: Peaks | None = None) -> list[dict[str, Any]]:
    """Sizes, FLOPs, bytes moved, arithmetic intensity and (given peaks) the time floor of every config.

    Bytes moved default to inputs, weights and outputs each crossing memory once: a lower bound, as a
    floor needs. FLOPs default to the FLOP counter's count of the reference (matrix products,
    convolutions, attention); a problem's own flops()/bytes_moved() win.
    """
    module = load_module(problem.path, "problem")
    figures = []
    for index, (config, hidden) in enumerate(problem.all_configs()):
        described = describe_config(module, config)
        flops = int(described.get("flops", 0))
        moved = described.get("bytes_moved")
        if moved is None:
            moved = sum(described.get(k, 0) for k in ("input_bytes", "parameter_bytes", "output_bytes"))
        figure = {
            "index": index,
            "config": config,
            "hidden": hidden,
            **{k: described[k] for k in ("input_bytes", "output_bytes", "parameter_bytes") if k in described},
            "flops": flops,
            "bytes_moved": int(moved),
            "intensity": flops / moved if moved else None,
        }
        if "unknown" in described:
            figure["unknown"] = described["unknown"]
        if peaks is not None:
            figure["floor_s"] = peaks.floor_s(flops, int(moved))
        figures.append(figure)
    return figures


def task_details(problem: Problem, peaks: Peaks | None = None) -> dict[str, Any]:
    """Everything `cudasmith show` prints: the listing row, tolerance, source and per-config figures."""
    import torch

    from cudasmith.harness.check import CALIBRATION_FACTOR, tolerance_for

    dtype = problem.dtype or "float32"
    torch_dtype = getattr(torch, dtype, None)
    floating = isinstance(torch_dtype, torch.dtype) and torch_dtype.is_floating_point
    return {
        **task_row(problem),
        "path": str(problem.path),
        "tolerance": tolerance_for(torch_dtype, problem.tolerance) if floating else None,
        "calibration_factor": CALIBRATION_FACTOR,
        "tolerance_overrides": problem.tolerance,
        "peaks": None
        if peaks is None
        else {"flops_per_s": peaks.flops_per_s, "bytes_per_s": peaks.bytes_per_s},
        "config_figures": config_figures(problem, peaks),
        "source": problem.source,
    }
