"""Every built-in task on the GPU: its reference (task dtype and float64) at every config, hidden ones
included, its EXPERT where it has one, and torch.compile at its smallest config.

    python benchmarks/suite_gpu.py [--level level1] [--json FILE]
    python benchmarks/suite_gpu.py --results R.jsonl --shard 1/3 --time-budget 500   # in parallel, resumable

Prints one line per task (configs that ran, what failed and why, seconds) and the counts last.
Problem files are trusted code, so this runs them in one process, one after another. With --results,
each task's row is appended to that JSON-lines file as it finishes and tasks already there are skipped,
so a run cut short resumes, and shards running at once share one file; the counts then cover the file.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from cudasmith.tasks import list_task_names, load_task
from cudasmith.tasks.inputs import build_model, make_init_inputs, make_inputs, to_float64
from cudasmith.tasks.problem import load_module

SEED = 1234


def _outputs(value: Any) -> list[torch.Tensor]:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _non_finite(outputs: list[torch.Tensor]) -> list[torch.Tensor | None]:
    """Where each floating-point output is NaN or infinite (None for other outputs)."""
    return [~torch.isfinite(o) if o.is_floating_point() else None for o in outputs]


def _same_non_finite(first: list[torch.Tensor | None], second: list[torch.Tensor | None]) -> bool:
    """NaN and Inf at the same places (infinities are legitimate answers: unreached vertices, sort keys)."""
    return all(
        (a is None) == (b is None) and (a is None or torch.equal(a, b))  # type: ignore[arg-type]
        for a, b in zip(first, second, strict=True)
    )


def run_config(module: Any, config: dict[str, Any], expert: bool) -> list[str]:
    """Problems found running one config (an empty list when everything ran)."""
    problems = []
    init_inputs = make_init_inputs(module, config, SEED)
    inputs = make_inputs(module, config, SEED, "cuda")
    with torch.no_grad():
        model = build_model(module.Model, init_inputs, SEED, "cuda")
        outputs = _outputs(model(*inputs))
        torch.cuda.synchronize()
        try:
            model64 = build_model(module.Model, init_inputs, SEED, "cuda").to(torch.float64)
            outputs64 = _outputs(model64(*to_float64(inputs)))
            if [o.shape for o in outputs64] != [o.shape for o in outputs]:
                problems.append("float64 reference has other shapes")
            elif not _same_non_finite(_non_finite(outputs), _non_finite(outputs64)):
                problems.append("NaN/Inf where the float64 reference has none (or the other way)")
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


def _finished(path: str | None) -> dict[str, dict[str, Any]]:
    """The rows already in a results file, by task (a torn last line is ignored)."""
    rows: dict[str, dict[str, Any]] = {}
    if path and os.path.exists(path):
        for line in Path(path).read_text().splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            rows[row["task"]] = row
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", help="only this level, e.g. level1")
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument(
        "--results", help="JSON-lines file: rows appended as tasks finish, finished tasks skipped"
    )
    parser.add_argument("--shard", default="1/1", help="K/N: run every N-th task from the K-th (default 1/1)")
    parser.add_argument("--time-budget", type=float, help="start no new task after this many seconds")
    args = parser.parse_args()
    shard, shards = (int(part) for part in args.shard.split("/"))
    if not 1 <= shard <= shards:
        parser.error(f"--shard {args.shard}: K must be between 1 and N")
    names = [n for n in list_task_names() if args.level is None or n.startswith(f"{args.level}/")]
    done = _finished(args.results)
    names = [n for i, n in enumerate(names) if i % shards == shard - 1 and n not in done]
    started = time.perf_counter()
    rows = []
    print(
        f"{len(names)} tasks to run ({len(done)} already in the results) on {torch.cuda.get_device_name()}, "
        f"torch {torch.__version__}",
        flush=True,
    )
    for name in names:
        if args.time_budget is not None and time.perf_counter() - started > args.time_budget:
            print(f"time budget of {args.time_budget:.0f} s spent: the other tasks are left for a later run")
            break
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
        row = {"task": name, "configs": len(configs), "ran": ran, "failures": failures, "seconds": seconds}
        rows.append(row)
        if args.results:
            with open(args.results, "a") as handle:  # one short write per line: shards may share the file
                handle.write(json.dumps(row) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
        status = "ok" if not failures else "; ".join(failures)
        print(f"{name:42} {ran}/{len(configs)} configs  {seconds:6.1f} s  {status}", flush=True)
    total = time.perf_counter() - started
    if args.results:
        rows = list(_finished(args.results).values())
        total = sum(r["seconds"] for r in rows)
        print(f"\nthe results file holds {len(rows)} of {len(list_task_names())} tasks (seconds: their sum)")
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
