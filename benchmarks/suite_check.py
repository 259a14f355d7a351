"""Does every built-in task's reference and baseline run on this machine, at every config?

    python benchmarks/suite_check.py [--levels level3 apps backward challenge] [--device cuda]

For each task and config (hidden ones included) this builds the model and inputs as the harness does
(on the CPU from seeds, then moved), runs the reference in the task dtype and in float64, runs the
task's validator on the reference's own answer, and runs the EXPERT baseline and judges it with the
harness's judge. On the CPU, configs over the harness's CPU size guard are skipped, as `eval` skips
them. One line per config; the exit code is 0 when everything that ran passed.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.table import Table

from cudasmith.harness.check import judge
from cudasmith.harness.runner import CPU_MAX_CONFIG_BYTES, CPU_MAX_CONFIG_FLOPS
from cudasmith.tasks import list_task_names, load_task
from cudasmith.tasks.inputs import build_model, describe_config, make_init_inputs, make_inputs, to_float64
from cudasmith.tasks.problem import load_module

INIT_SEED, INPUT_SEED = 3, 4


def _outputs(value: Any) -> list[torch.Tensor]:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _timed(model: Any, inputs: list[Any], device: str) -> tuple[list[torch.Tensor], float]:
    started = time.perf_counter()
    with torch.no_grad():
        outputs = _outputs(model(*inputs))
    _sync(device)
    return outputs, time.perf_counter() - started


def _error(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:200] if lines else ''}"


def check_config(name: str, module: Any, problem: Any, config: dict[str, Any], device: str) -> dict[str, Any]:
    """Reference (task dtype and float64), validator and expert for one config."""
    record: dict[str, Any] = {}
    if device == "cpu":
        described = describe_config(module, config)
        size = described.get("input_bytes", 0) + described.get("output_bytes", 0)
        if size > CPU_MAX_CONFIG_BYTES or described.get("flops", 0) > CPU_MAX_CONFIG_FLOPS:
            return {"reference": "skipped: too large for the CPU"}
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    init_inputs = make_init_inputs(module, config, INIT_SEED)
    inputs = make_inputs(module, config, INPUT_SEED, device)
    model = build_model(module.Model, init_inputs, INIT_SEED, device)
    _timed(model, inputs, device)
    outputs, seconds = _timed(model, inputs, device)
    record["reference"], record["reference_s"] = "ok", round(seconds, 4)
    del model
    try:
        model64 = build_model(module.Model, init_inputs, INIT_SEED, device).to(torch.float64)
        outputs64 = [o.cpu() for o in _timed(model64, to_float64(inputs), device)[0]]
        record["float64"] = "ok"
        del model64
    except Exception as exc:
        outputs64, record["float64"] = None, _error(exc)
    expected = [o.cpu() for o in outputs]
    del outputs
    validate = getattr(module, "validate", None)
    cpu_inputs = make_inputs(module, config, INPUT_SEED, "cpu") if validate else None
    own = judge([o.clone() for o in expected], expected, outputs64, problem.tolerance, validate, cpu_inputs)
    record["self_judged"] = "ok" if own.ok else own.reason
    expert_class = getattr(module, "EXPERT", None)
    if expert_class is not None:
        try:
            expert = build_model(expert_class, init_inputs, INIT_SEED, device)
            _timed(expert, inputs, device)
            answer, expert_seconds = _timed(expert, inputs, device)
            verdict = judge(
                [o.cpu() for o in answer], expected, outputs64, problem.tolerance, validate, cpu_inputs
            )
            record["expert"] = "ok" if verdict.ok else verdict.reason
            record["expert_s"] = round(expert_seconds, 4)
        except Exception as exc:
            record["expert"] = _error(exc)
    if device == "cuda":
        record["peak_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", nargs="+", default=["level3", "apps", "backward", "challenge"])
    parser.add_argument("--tasks", nargs="+", help="only these tasks, e.g. apps/bfs")
    parser.add_argument("--device", choices=("cuda", "cpu"), help="default: cuda when a GPU is visible")
    parser.add_argument("--results", type=Path, help="also write one JSON line per config here")
    args = parser.parse_args()
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    names = args.tasks or [n for n in list_task_names() if n.split("/")[0] in args.levels]
    console = Console()
    table = Table(title=f"built-in tasks on {device}", show_edge=False)
    for column in (
        "task",
        "config",
        "reference",
        "float64",
        "self-judged",
        "expert",
        "ref s",
        "expert s",
        "GiB",
    ):
        table.add_column(column)
    failures = 0
    sink = args.results.open("a") if args.results else None
    for name in names:
        problem = load_task(name)
        module = load_module(problem.path, "problem")
        for index, (config, hidden) in enumerate(problem.all_configs()):
            try:
                record = check_config(name, module, problem, config, device)
            except Exception as exc:
                record = {"reference": _error(exc)}
            gc.collect()
            if device == "cuda":
                torch.cuda.empty_cache()
            record = {"task": name, "config": config, "hidden": hidden, "device": device, **record}
            bad = [k for k in ("reference", "self_judged", "expert") if record.get(k, "ok") not in ("ok",)]
            bad = [k for k in bad if not str(record[k]).startswith("skipped")]
            failures += bool(bad)
            if sink:
                sink.write(json.dumps(record) + "\n")
                sink.flush()
            label = f"hidden#{index - len(problem.configs)}" if hidden else str(index)
            table.add_row(
                name,
                label,
                str(record.get("reference")),
                str(record.get("float64", "–")),
                str(record.get("self_judged", "–")),
                str(record.get("expert", "–")),
                str(record.get("reference_s", "–")),
                str(record.get("expert_s", "–")),
                str(record.get("peak_gib", "–")),
            )
            print(
                f"{name} {label}: "
                + ", ".join(
                    f"{k} {record[k]}" for k in record if k not in ("task", "config", "hidden", "device")
                ),
                file=sys.stderr,
            )
    console.print(table)
    print(f"{failures} configs with a failure")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
