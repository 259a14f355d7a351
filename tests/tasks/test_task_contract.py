"""The suite's promises: counts per level, every task's configs and declarations, EXPERT baselines that
agree with their references, and backward references that return the true gradients."""

from __future__ import annotations

import inspect
import math

import pytest
import torch
from test_suite import INIT_SEED, INPUT_SEED, _as_list, _judge, case
from torch import nn

from cudasmith.tasks import list_task_names, load_task
from cudasmith.tasks.catalog import level_counts
from cudasmith.tasks.inputs import build_model, make_init_inputs, make_inputs
from cudasmith.tasks.problem import load_module

TASKS = list_task_names()
MINIMUM_PER_LEVEL = {"level3": 10, "apps": 8, "backward": 6, "challenge": 4}
FLOAT_OR_INT_DTYPES = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8")


def _with_expert() -> list[str]:
    return [name for name in TASKS if load_task(name).expert is not None]


def test_every_level_holds_its_minimum_count() -> None:
    counts = level_counts(load_task(name) for name in TASKS)
    short = {
        level: counts.get(level, 0)
        for level, least in MINIMUM_PER_LEVEL.items()
        if counts.get(level, 0) < least
    }
    assert not short, f"levels below their minimum count: {short}"


@pytest.mark.parametrize("name", TASKS)
def test_task_declares_what_the_suite_promises(name: str) -> None:
    problem = load_task(name)
    module = load_module(problem.path, "problem")
    assert len(problem.configs) >= 3 and problem.hidden_configs, "at least 3 public and 1 hidden config"
    assert problem.dtype in FLOAT_OR_INT_DTYPES, f"DTYPE {problem.dtype!r}"
    assert problem.description and "\n" not in problem.description
    assert not set(map(str, problem.hidden_configs)) & set(map(str, problem.configs)), "hidden shapes repeat"
    sizes = [v for config, _ in problem.all_configs() for v in config.values() if isinstance(v, int)]
    assert any(v % 32 for v in sizes), "no size off a multiple of 32"
    for function in (module.get_inputs, module.get_init_inputs):
        defaults = {k: p.default for k, p in inspect.signature(function).parameters.items()}
        assert defaults == problem.configs[0], f"{function.__name__}'s defaults are not the first config"
    expert = getattr(module, "EXPERT", None)
    assert expert is None or (inspect.isclass(expert) and issubclass(expert, nn.Module))


@pytest.mark.parametrize("name", _with_expert())
def test_expert_passes_the_judge_on_the_cpu(name: str) -> None:
    c = case(name)
    init_inputs = make_init_inputs(c.module, c.config, INIT_SEED)
    expert = build_model(c.module.EXPERT, init_inputs, INIT_SEED, "cpu")
    with torch.no_grad():
        answer = _as_list(expert(*make_inputs(c.module, c.config, INPUT_SEED, "cpu")))
    verdict = _judge(c, answer)
    assert verdict.ok, verdict.reason


def _reference(name: str) -> tuple[list[torch.Tensor], list]:
    c = case(name)
    return c.outputs, c.inputs


def test_matmul_backward_is_the_transposed_products() -> None:
    (grad_a, grad_b), (a, b, grad_c) = _reference("backward/matmul_backward")
    torch.testing.assert_close(grad_a, grad_c @ b.t())
    torch.testing.assert_close(grad_b, a.t() @ grad_c)


def test_softmax_backward_is_the_jacobian_product() -> None:
    (grad_x,), (x, grad_y) = _reference("backward/softmax_backward")
    y = torch.softmax(x.double(), dim=-1)
    expected = y * (grad_y.double() - (grad_y.double() * y).sum(-1, keepdim=True))
    torch.testing.assert_close(grad_x.double(), expected, rtol=1e-4, atol=1e-7)


def test_gelu_backward_is_the_derivative() -> None:
    (grad_x,), (x, grad_y) = _reference("backward/gelu_backward")
    x = x.double()
    derivative = 0.5 * (1 + torch.erf(x / math.sqrt(2))) + x * torch.exp(-0.5 * x**2) / math.sqrt(2 * math.pi)
    torch.testing.assert_close(grad_x.double(), grad_y.double() * derivative, rtol=1e-4, atol=1e-6)


def test_cross_entropy_backward_spreads_the_smoothing_and_skips_ignored_rows() -> None:
    (grad_logits,), (logits, targets, grad_loss) = _reference("backward/cross_entropy_backward")
    module = case("backward/cross_entropy_backward").module
    kept = targets != module.IGNORE_INDEX
    vocab, smoothing = logits.shape[1], module.LABEL_SMOOTHING
    target_mass = torch.full(logits.shape, smoothing / vocab, dtype=torch.float64)
    target_mass[kept.nonzero().squeeze(1), targets[kept]] += 1 - smoothing
    expected = (torch.softmax(logits.double(), -1) - target_mass) * kept.unsqueeze(1) * grad_loss / kept.sum()
    torch.testing.assert_close(grad_logits.double(), expected, rtol=1e-4, atol=1e-8)
    assert bool((grad_logits[~kept] == 0).all())
