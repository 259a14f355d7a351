"""An OpenEvolve evaluator backed by `cudasmith serve`: each evolved program is a cudasmith solution (a file
defining ModelNew), judged by a running server with every defence on.

OpenEvolve imports this file (`evaluator.py` on its command line) and calls `evaluate(program_path)` for
each program, from as many evaluations at once as its `evaluator.parallel_evaluations` says; here they queue
on the server, which judges K at once on each GPU with timing alone on the device. It evolves towards a
larger `combined_score`: cudasmith's reward (0 unless correct, so a caught cheat earns nothing; 0.3 plus
the speedup over eager PyTorch when correct), the one `cudasmith export` writes for RL.

Settings, from the environment:
    CUDASMITH_SERVER    the server's URL (default http://127.0.0.1:8765)
    CUDASMITH_TOKEN     its bearer token, if it has one
    CUDASMITH_TASK      the built-in task the programs solve (default level1/softmax)
    CUDASMITH_OPTIONS   judging options as JSON, e.g. {"time_limit": 5, "baselines": ["compile"]}
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

import cudasmith


def metrics(verdict: cudasmith.Verdict) -> dict[str, float]:
    """What OpenEvolve reads of a verdict: numbers only, `combined_score` first."""
    sol = [config.sol_pct for config in verdict.configs if config.sol_pct is not None]
    return {
        "combined_score": cudasmith.reward(verdict),
        "correct": float(verdict.correct),
        "speedup": verdict.speedup or 0.0,
        "speedup_compile": verdict.speedups.get("compile", 0.0) if verdict.correct else 0.0,
        "sol_pct": statistics.median(sol) if sol else 0.0,
        "judge_s": verdict.wall_s,
    }


def evaluate(program_path: str) -> dict[str, float]:
    """OpenEvolve's evaluator contract: the program's file in, its metrics out."""
    client = cudasmith.Client(os.environ.get("CUDASMITH_SERVER", "http://127.0.0.1:8765"))
    task = os.environ.get("CUDASMITH_TASK", "level1/softmax")
    options = json.loads(os.environ.get("CUDASMITH_OPTIONS") or "{}")
    return metrics(client.judge(Path(program_path), task=task, options=options))
