"""Every built-in task: its reference runs on the CPU at its smallest config, deterministically, and the
harness's judgement refuses trivial answers (zeros, ones, a constant, an input passed through, the answer
for other inputs). A task whose inputs make such an answer pass does not exercise its function."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest
import torch

from cudasmith.harness.workers.check import compare_outputs, validate_outputs
from cudasmith.tasks import list_task_names, load_task
from cudasmith.tasks.inputs import build_model, describe_config, make_init_inputs, make_inputs, to_float64
from cudasmith.tasks.problem import load_module

INIT_SEED, INPUT_SEED, OTHER_SEED = 11, 12, 13


@dataclass
class Case:
    """One task at its smallest public config, with reference outputs for two input sets."""

    problem: Any
    module: Any
    config: dict[str, Any]
    inputs: list[Any]
    outputs: list[torch.Tensor]
    outputs64: list[torch.Tensor] | None
    other_outputs: list[torch.Tensor]


def _as_list(value: Any) -> list[torch.Tensor]:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _smallest_config(module: Any, configs: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    def size(config: dict[str, Any]) -> float:
        described = describe_config(module, config)
        if "input_bytes" not in described:
            return float("inf")
        return described["input_bytes"] + described.get("output_bytes", 0)

    return min(configs, key=size)


@cache
def case(name: str) -> Case:
    problem = load_task(name)
    module = load_module(problem.path, "problem")
    config = _smallest_config(module, problem.configs)
    init_inputs = make_init_inputs(module, config, INIT_SEED)
    model = build_model(module.Model, init_inputs, INIT_SEED, "cpu")
    inputs = make_inputs(module, config, INPUT_SEED, "cpu")
    with torch.no_grad():
        outputs = _as_list(model(*inputs))
        other_outputs = _as_list(model(*make_inputs(module, config, OTHER_SEED, "cpu")))
        try:
            model64 = build_model(module.Model, init_inputs, INIT_SEED, "cpu").to(torch.float64)
            outputs64: list[torch.Tensor] | None = _as_list(model64(*to_float64(inputs)))
        except Exception:
            outputs64 = None
    return Case(problem, module, config, inputs, outputs, outputs64, other_outputs)


def _judge(c: Case, answer: list[torch.Tensor]) -> Any:
    validate = getattr(c.module, "validate", None)
    if validate is None:
        return compare_outputs(answer, c.outputs, c.outputs64, c.problem.tolerance)
    return validate_outputs(answer, c.outputs, validate, c.inputs)


def trivial_answers(c: Case) -> dict[str, list[torch.Tensor]]:
    answers = {
        "zeros": [torch.zeros_like(o) for o in c.outputs],
        "ones": [torch.ones_like(o) for o in c.outputs],
        "the answer for other inputs": c.other_outputs,
    }
    if all(o.is_floating_point() and o.numel() > 1 for o in c.outputs):
        answers["the mean as a constant"] = [torch.full_like(o, float(o.double().mean())) for o in c.outputs]
    tensors = [i for i in c.inputs if isinstance(i, torch.Tensor)]
    for index, source in enumerate(tensors):
        if all(source.shape == o.shape for o in c.outputs):
            answers[f"input {index} passed through"] = [source.to(o.dtype) for o in c.outputs]
    return answers


TASKS = list_task_names()


@pytest.mark.parametrize("name", TASKS)
def test_reference_runs_on_the_cpu_deterministically(name: str) -> None:
    c = case(name)
    assert c.outputs and all(type(o) is torch.Tensor for o in c.outputs)
    assert _judge(c, [o.clone() for o in c.outputs]).ok, "the reference must pass its own judgement"
    model = build_model(c.module.Model, make_init_inputs(c.module, c.config, INIT_SEED), INIT_SEED, "cpu")
    with torch.no_grad():
        again = _as_list(model(*make_inputs(c.module, c.config, INPUT_SEED, "cpu")))
    assert all(torch.equal(a, b) for a, b in zip(again, c.outputs, strict=True)), (
        "forward is not deterministic"
    )


@pytest.mark.parametrize("name", TASKS)
def test_trivial_answers_are_refused(name: str) -> None:
    c = case(name)
    passed = [what for what, answer in trivial_answers(c).items() if _judge(c, answer).ok]
    assert not passed, f"{name} at {c.config} accepts: {', '.join(passed)}"
