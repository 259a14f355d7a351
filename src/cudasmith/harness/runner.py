"""Entry point of an evaluation: its options, which configs run where, and `evaluate()`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from cudasmith.errors import UsageError
from cudasmith.harness.verdict import Verdict
from cudasmith.tasks.problem import Problem
from cudasmith.timing.protocol import L2_STATES

# Each config is checked on this many independently drawn input sets.
SEEDS_PER_CONFIG = 3
# Distinct input sets that timing rotates through (the worker may use fewer to fit memory).
TIMING_SEEDS = 4
# Import and compilation of a solution: load_inline builds take ~45 s each, several may be needed.
LOAD_TIMEOUT_S = 900.0
# One call of forward, first calls included (Triton compiles and autotunes then).
CALL_TIMEOUT_S = 180.0
# Timing one config: warm-up, up to timing.MAX_SECONDS of samples, and making the input sets.
TIMING_TIMEOUT_S = 300.0
# Measuring the device's peaks, once per device and software versions (seconds, first time only).
PEAKS_TIMEOUT_S = 300.0
# On the CPU, configs bigger than this (inputs plus outputs, or FLOPs) are skipped; the smallest
# public and the smallest hidden config always run.
CPU_MAX_CONFIG_BYTES = 64 * 1024**2
CPU_MAX_CONFIG_FLOPS = 2e9
# Timed calls whose outputs are kept and checked against the reference, per config.
TIMED_CHECKS = 4

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class EvalOptions:
    """How one evaluation runs; the defaults are the protocol."""

    device: str = "cuda"
    seeds_per_config: int = SEEDS_PER_CONFIG
    seed: int | None = None
    timing: bool = True
    load_timeout_s: float = LOAD_TIMEOUT_S
    call_timeout_s: float = CALL_TIMEOUT_S
    timing_timeout_s: float = TIMING_TIMEOUT_S
    timed_checks: int = TIMED_CHECKS
    # Widen the problem's allowlist of PyTorch operators inside forward: "all" or ATen names.
    allow_torch_ops: str | tuple[str, ...] = ()
    # Also check each config on inputs the harness draws itself (signed, wider range).
    drawn_inputs: bool = True
    # Refuse forbidden constructs by reading the source before running anything.
    screen: bool = True
    # Host memory a worker and everything it starts may use (default: half the machine's).
    memory_limit_bytes: int | None = None
    # Off only to measure what the defences cost: no screen, drawn inputs, timed checks, poisoning,
    # operator recording, input and tamper checks. Such a verdict says so and judges nothing.
    defences: bool = True
    # Baselines timed beside eager PyTorch (None: baselines.default_baselines for the device).
    baselines: tuple[str, ...] | None = None
    # L2 state while timing (None: the problem's L2_STATE, cold unless it says hot).
    l2_state: str | None = None
    # Time CUDA-graph replays of each call (for launch-bound kernels) instead of queued calls.
    graph: bool = False
    baseline_cache: bool = True


def select_configs(
    problem: Problem, descriptions: list[dict[str, Any]], device: str
) -> tuple[list[tuple[int, dict[str, Any], bool]], list[dict[str, Any]]]:
    """Configs to run (index, config, hidden) and those skipped with why; on the GPU every one runs."""
    everything = [(i, c, h) for i, (c, h) in enumerate(problem.all_configs())]
    if device.startswith("cuda"):
        return everything, []

    def size(index: int) -> float:
        described = descriptions[index]
        return float(described.get("input_bytes", 0) + described.get("output_bytes", 0))

    def too_big(index: int) -> str | None:
        described = descriptions[index]
        if size(index) > CPU_MAX_CONFIG_BYTES:
            return f"{size(index) / 2**20:.0f} MiB of inputs and outputs"
        if described.get("flops", 0) > CPU_MAX_CONFIG_FLOPS:
            return f"{described['flops'] / 1e9:.1f} GFLOP"
        return None

    selected, skipped = [], []
    for hidden in (False, True):
        group = [item for item in everything if item[2] is hidden]
        smallest = min((item[0] for item in group), key=size, default=None)
        for index, config, is_hidden in group:
            why = too_big(index)
            if why is None or index == smallest:
                selected.append((index, config, is_hidden))
            else:
                skipped.append(
                    {
                        "index": index,
                        "config": "hidden" if is_hidden else config,
                        "reason": f"too large for the CPU ({why})",
                    }
                )
    return selected, skipped


def evaluate(
    solution: str | Path,
    problem: Problem,
    options: EvalOptions | None = None,
    progress: Progress | None = None,
) -> Verdict:
    """Judge one solution file against one problem and return the verdict."""
    solution = Path(solution)
    if not solution.is_file():
        raise UsageError(f"solution file not found: {solution}")
    options = options or EvalOptions()
    if options.device not in ("cuda", "cpu") and not options.device.startswith("cuda:"):
        raise UsageError(f"device must be 'cuda' or 'cpu', not {options.device!r}")
    if options.l2_state is not None and options.l2_state not in L2_STATES:
        raise UsageError(f"the L2 state must be one of {', '.join(L2_STATES)}, not {options.l2_state!r}")
    if options.graph and not options.device.startswith("cuda"):
        raise UsageError("CUDA-graph timing (--graph) needs a GPU")
    if options.device.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError("no CUDA GPU is visible here; use --device cpu (C kernels) or run on a GPU machine")
    from cudasmith.harness.evaluation import Evaluation

    return Evaluation(solution, problem, options, progress).run()
