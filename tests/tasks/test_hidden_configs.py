"""Hidden configs stay hidden: their sizes are drawn anew for every session from the task's declared
ranges (no fixed hidden shape exists to be learnt), and `show` and prompts say how many there are, never
what they are. A KernelBench-style list of fixed dicts keeps working."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudasmith.errors import ProblemError
from cudasmith.tasks import list_task_names, load_problem, load_task
from cudasmith.tasks.hidden import draw_hidden, for_session, hidden_summary, is_drawn
from cudasmith.tasks.inputs import describe_config
from cudasmith.tasks.problem import load_module

from conftest import run_cli

DRAWN_TASKS = [name for name in list_task_names() if any(map(is_drawn, load_task(name).hidden_configs))]


def _extreme(config: dict[str, object], end: int) -> dict[str, object]:
    return {key: value[end] if isinstance(value, range) else value for key, value in config.items()}


def test_every_built_in_task_draws_its_hidden_sizes() -> None:
    assert len(DRAWN_TASKS) == len(list_task_names())


@pytest.mark.parametrize("name", DRAWN_TASKS)
def test_every_size_a_session_may_draw_is_a_valid_shape(name: str) -> None:
    """At both ends of every range the reference runs (on meta tensors) as it does at a public config."""
    problem = load_task(name)
    module = load_module(problem.path, "problem")
    runs_on_meta = "unknown" not in describe_config(module, problem.configs[0])
    for declared in problem.hidden_configs:
        for end in (0, -1):
            described = describe_config(module, _extreme(declared, end))
            assert not runs_on_meta or "unknown" not in described, (end, described.get("unknown"))


def test_sessions_draw_other_sizes_and_a_session_the_same_ones() -> None:
    problem = load_task("level1/matmul")
    first, again, other = (for_session(problem, secret).hidden_configs for secret in (1, 1, 2))
    assert first == again and first != other
    declared = problem.hidden_configs[0]
    assert all(first[0][key] in declared[key] for key in declared)
    assert draw_hidden({"n": 7, "m": range(3, 4)}, 5, 0) == {"n": 7, "m": 3}


def test_fixed_hidden_configs_and_ranges_are_declared_in_one_list(tmp_path: Path) -> None:
    body = "import torch\nfrom torch import nn\nclass Model(nn.Module):\n    def forward(self, x): return x\n"
    body += "def get_inputs(n=4, m=2): return [torch.randn(n, m)]\n"
    fixed = tmp_path / "fixed.py"
    fixed.write_text(body + "HIDDEN_CONFIGS = [{'n': 7, 'm': 3}]\n")
    problem = load_problem(fixed)
    assert for_session(problem, 9).hidden_configs == ({"n": 7, "m": 3},)
    mixed = tmp_path / "mixed.py"
    mixed.write_text(body + "HIDDEN_CONFIGS = [{'n': 7, 'm': 3}, {'n': range(5, 9), 'm': 2}]\n")
    drawn = for_session(load_problem(mixed), 9).hidden_configs
    assert drawn[0] == {"n": 7, "m": 3} and drawn[1]["n"] in range(5, 9)
    empty = tmp_path / "empty.py"
    empty.write_text(body + "HIDDEN_CONFIGS = [{'n': range(5, 5)}]\n")
    with pytest.raises(ProblemError, match="empty range"):
        load_problem(empty)


def test_show_and_prompt_say_how_many_hidden_configs_never_their_shapes() -> None:
    declared = load_task("level1/matmul").hidden_configs[0]
    shown = [str(value.start) for value in declared.values()] + [
        str(value.stop - 1) for value in declared.values()
    ]
    text = run_cli("show", "level1/matmul", "--no-source", "--device", "cpu")
    assert text.returncode == 0, text.stderr
    assert "1 hidden config (sizes drawn anew for every session), never shown" in text.stdout
    details = run_cli("show", "level1/matmul", "--json", "--no-source", "--device", "cpu")
    data = json.loads(details.stdout)
    assert data["hidden_configs"] == 1 and len(data["config_figures"]) == len(
        load_task("level1/matmul").configs
    )
    prompt = run_cli("prompt", "level1/matmul", "--device", "cpu")
    assert prompt.returncode == 0, prompt.stderr
    assert "Hidden configs (1) with other sizes" in prompt.stdout
    for output in (text.stdout, details.stdout.replace(data["source"], ""), prompt.stdout):
        assert "hidden m=" not in output and not any(f"m={value}" in output for value in shown)
    assert (
        hidden_summary(load_task("level1/matmul"))
        == "1 hidden config (sizes drawn anew for every session), never shown"
    )
