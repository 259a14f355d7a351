"""The child that Nsight Compute profiles (harness/nsight.py): one forward call of a candidate on one config.

    python -m cudasmith.harness.workers.profiled SOLUTION PROBLEM CONFIG_JSON SEED

It builds the model, makes the config's inputs, calls forward once to warm up, then once between
cudaProfilerStart/Stop (ncu --profile-from-start off), so only the candidate's own call is profiled. It runs
candidate code: the parent starts it with the workers' environment (no credentials), in a process group of
its own killed whole at the deadline, and what it reports only feeds a prompt, never a verdict.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from cudasmith.tasks.inputs import build_model, make_init_inputs, make_inputs
from cudasmith.tasks.problem import load_module


def main() -> None:
    solution, problem_path, config, seed = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
    problem = load_module(Path(problem_path), "problem")
    inputs = make_inputs(problem, config, seed, "cuda")
    model = build_model(
        load_module(Path(solution), "solution").ModelNew,
        make_init_inputs(problem, config, seed),
        seed,
        "cuda",
    )
    with torch.no_grad():
        model(*inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        model(*inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()


if __name__ == "__main__":
    main()
