"""KernelBench's own evaluator on one candidate, in this process, imported from a KernelBench checkout.

    python benchmarks/kernelbench_evaluator.py --kernelbench DIR --problem PROBLEM.py --solution SOLUTION.py \
        [--backend cuda|triton] [--precision float32|bfloat16|float16]

Runs `kernelbench.eval.eval_kernel_against_ref` as KernelBench's scripts do (5 correctness trials, 100
timing trials with CUDA events, seed 42, speedup check against the reference), on the problem's
get_inputs() defaults, i.e. its first config. Prints one JSON object on the original stdout: status
(correct, incorrect, compile_error, runtime_error), reason, seconds, and KernelBench's times; whatever
KernelBench or the candidate prints goes to stderr. benchmarks/throughput.py starts one such process per
candidate, as KernelBench does.

Nothing of KernelBench is copied here. DIR is a checkout of github.com/ScalingIntelligence/KernelBench (its
root, or its src/kernelbench folder). Its package __init__ imports kernelbench.utils, which imports
python-dotenv, openai and litellm for the LLM side; the evaluator needs none of them, so the package is
set up without running __init__, and kernelbench.utils holds only get_gpu_vendor, the one function the
evaluator takes from it, compiled from the checkout's own utils.py. eval.py imports pydantic at module level.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import os
import sys
import time
import types
from pathlib import Path
from typing import Any

# KernelBench's defaults in its scripts (scripts/run_and_check.py, scripts/eval_from_generations.py).
CORRECTNESS_TRIALS = 5
TIMING_TRIALS = 100
SEED = 42
TIMING_METHOD = "cuda_event"
# The only name the evaluator imports from kernelbench.utils.
UTILS_NAMES = ("get_gpu_vendor",)


def package_dir(checkout: Path) -> Path:
    """The kernelbench package folder inside a checkout (its root or the folder itself)."""
    for candidate in (checkout / "src" / "kernelbench", checkout):
        if (candidate / "eval.py").is_file() and (candidate / "timing.py").is_file():
            return candidate
    raise SystemExit(f"no KernelBench evaluator under {checkout} (expected src/kernelbench/eval.py)")


def _utils_subset(utils_path: Path) -> types.ModuleType:
    """kernelbench.utils with only the functions the evaluator uses, compiled from the checkout's source."""
    import torch

    tree = ast.parse(utils_path.read_text(), str(utils_path))
    wanted = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in UTILS_NAMES]
    missing = set(UTILS_NAMES) - {n.name for n in wanted}
    if missing:
        raise SystemExit(
            f"{utils_path} has no {', '.join(sorted(missing))}: a KernelBench version this script does not know"
        )
    module = types.ModuleType("kernelbench.utils")
    module.__file__ = str(utils_path)
    module.torch = torch  # the one module those functions use
    exec(compile(ast.Module(body=wanted, type_ignores=[]), str(utils_path), "exec"), module.__dict__)
    return module


def load_evaluator(checkout: Path) -> types.ModuleType:
    """kernelbench.eval from the checkout, without the package __init__ and its LLM-client imports."""
    folder = package_dir(checkout)
    package = types.ModuleType("kernelbench")
    package.__path__ = [str(folder)]
    sys.modules["kernelbench"] = package
    sys.modules["kernelbench.utils"] = _utils_subset(folder / "utils.py")
    return importlib.import_module("kernelbench.eval")


def _short(value: Any, limit: int = 300) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def outcome(result: Any) -> dict[str, Any]:
    """Our status vocabulary for a KernelExecResult (None: KernelBench asks for a retry)."""
    if result is None:
        return {"status": "runtime_error", "reason": "KernelBench returned no result (a build lock: retry)"}
    metadata = dict(result.metadata)
    if not result.compiled:
        what = metadata.get("compilation_error", metadata.get("cuda_error", "compilation failed"))
        return {"status": "compile_error", "reason": _short(what)}
    if not result.correctness:
        if "runtime_error" in metadata:
            return {"status": "runtime_error", "reason": _short(metadata["runtime_error"])}
        issue = metadata.get("correctness_issue", "output mismatch")
        trials = metadata.get("correctness_trials", "")
        return {"status": "incorrect", "reason": _short(f"{issue} {trials}".strip())}
    found: dict[str, Any] = {
        "status": "correct",
        "reason": f"{metadata.get('correctness_trials', '')} trials passed",
    }
    if result.runtime > 0:
        found["time_ms"] = result.runtime / 1e3  # KernelBench reports microseconds
    if result.ref_runtime > 0:
        found["reference_ms"] = result.ref_runtime / 1e3
    if result.runtime > 0 and result.ref_runtime > 0:
        found["speedup"] = result.ref_runtime / result.runtime
    if metadata.get("excessive_speedup"):
        found["reason"] += "; flagged as an excessive speedup"
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernelbench", type=Path, required=True, help="KernelBench checkout")
    parser.add_argument("--problem", type=Path, required=True, help="problem file (Model, get_inputs, …)")
    parser.add_argument("--solution", type=Path, required=True, help="solution file (ModelNew)")
    parser.add_argument("--backend", choices=("cuda", "triton"), default="cuda")
    parser.add_argument("--precision", choices=("float32", "bfloat16", "float16"), default="float32")
    args = parser.parse_args()
    started = time.perf_counter()
    # Replies on the original stdout; everything printed from here on (KernelBench is chatty, and so may
    # the candidate be) goes to stderr, so it can never be mistaken for the reply.
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    try:
        import torch

        evaluator = load_evaluator(args.kernelbench)
        result = evaluator.eval_kernel_against_ref(
            original_model_src=args.problem.read_text(),
            custom_model_src=args.solution.read_text(),
            seed_num=SEED,
            num_correct_trials=CORRECTNESS_TRIALS,
            num_perf_trials=TIMING_TRIALS,
            measure_performance=True,
            timing_method=TIMING_METHOD,
            verbose=False,
            device=torch.device("cuda", 0),
            backend=args.backend,
            precision=getattr(torch, args.precision),
        )
        found = outcome(result)
    except Exception as exc:  # what escapes KernelBench: a sticky CUDA error, most often
        found = {"status": "runtime_error", "reason": _short(f"{type(exc).__name__}: {exc}")}
    found["seconds"] = time.perf_counter() - started
    replies.write(json.dumps(found) + "\n")
    replies.flush()


if __name__ == "__main__":
    main()
