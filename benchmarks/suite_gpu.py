"""Every built-in task on the GPU: its reference (task dtype and float64) at every config, hidden ones
included, its EXPERT where it has one, and torch.compile at its smallest config.

    python benchmarks/suite_gpu.py [--level level1] [--json FILE]

Prints one line per task (configs that ran, what failed and why, seconds) and the counts last.
Problem files are trusted code, so this runs them in one process, one after another.
"""

from __future__ import annotations

import argparse
import json
import time
import traceback
from typing import Any

import torch

from cudasmith.tasks import list_task_names, load_task
from cudasmith.tasks.inputs import build_model, make_init_inputs, make_inputs, to_float64
from cudasmith.tasks.problem import load_module

SEED = 1234


def _outputs(value: Any) -> list[torch.Tensor]:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _finite(outputs: list[torch.Tensor]) -> bool:
    return all(bool(torch.isfinite(o).all()) for o in outputs if o.is_floating_point())


def run_config(module: Any, config: dict[str, Any], expert: bool) -> list[str]:
    """Problems found running one config (an empty list when everything ran)."""
    problems = []
    init_inputs = make_init_inputs(module, config, SEED)
    inputs = make_inputs(module, config, SEED, "cuda")
    with torch.no_grad():
        model = build_model(module.Model, init_inputs, SEED, "cuda")
        outputs = _outputs(model(*inputs))
        torch.cuda.synchronize()
        if not _finite(outputs):
            problems.append("reference output has NaN/Inf")
        try:
            model64 = build_model(module.Model, init_inputs, SEED, "cuda").to(torch.float64)
            outputs64 = _outputs(model64(*to_float64(inputs)))
            if [o.shape for o in outputs64] != [o.shape for o in outputs]:
                problems.append("float64 reference has other shapes")
            del model64, outputs64
        except Exception as exc:
            problems.append(f"float64 reference: {type(exc).__name__}: {str(exc)[:120]}")
        if expert:
            try:
                expert_model = build_model(module.EXPERT, init_inputs, SEED, "cuda")
                _outputs(expert_model(*inputs))
                torch.cuda.synchronize()
            except Exception as exc:
                problems.append(f"EXPERT: {type(exc).__name__}: {str(exc)[:120]}")
    del model, outputs, inputs
    torch.cuda.empty_cache()
    return problems


def run_compile(module: Any, config: dict[str, Any]) -> str | None:
    """torch.compile of the reference at one config: None when it ran, else why not."""
    try:
        torch._dynamo.reset()
        init_inputs = make_init_inputs(module, config, SEED)
        model = build_model(module.Model, init_inputs, SEED, "cuda")
        compiled = torch.compile(model, dynamic=False)
        with torch.no_grad():
            compiled(*make_inputs(module, config, SEED, "cuda"))
        torch.cuda.synchronize()
        return None
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:120] if str(exc).strip() else ''}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", help="only this level, e.g. level1")
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    args = parser.parse_args()
    names = [n for n in list_task_names() if args.level is None or n.startswith(f"{args.level}/")]
    started = time.perf_counter()
    rows = []
    print(f"{len(names)} tasks on {torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    for name in names:
        task_started = time.perf_counter()
        problem = load_task(name)
        module = load_module(problem.path, "problem")
        failures = []
        configs = problem.all_configs()
        ran = 0
        for index, (config, _) in enumerate(configs):
            try:
                found = run_config(module, config, problem.expert is not None)
            except Exception as exc:
                found = [f"reference: {type(exc).__name__}: {str(exc)[:160]}"]
                traceback.print_exc(limit=2)
            failures += [f"config {index}: {f}" for f in found]
            ran += not any(f.startswith("reference") for f in found)
        compile_error = None if args.no_compile else run_compile(module, problem.configs[0])
        if compile_error:
            failures.append(f"torch.compile: {compile_error}")
        seconds = time.perf_counter() - task_started
        rows.append(
            {"task": name, "configs": len(configs), "ran": ran, "failures": failures, "seconds": seconds}
        )
        status = "ok" if not failures else "; ".join(failures)
        print(f"{name:42} {ran}/{len(configs)} configs  {seconds:6.1f} s  {status}", flush=True)
    total = time.perf_counter() - started
    clean = sum(1 for r in rows if not r["failures"])
    all_ran = sum(1 for r in rows if r["ran"] == r["configs"])
    print(f"\n{clean}/{len(rows)} tasks ran cleanly; {all_ran}/{len(rows)} ran their reference at every config; "
          f"{total:.0f} s in all")  # fmt: skip
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(
                {"device": torch.cuda.get_device_name(), "rows": rows, "seconds": total}, handle, indent=2
            )


if __name__ == "__main__":
    main()
