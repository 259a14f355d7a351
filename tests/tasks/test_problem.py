"""Problem files: the KernelBench form, our extensions, and clear errors for broken files."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudasmith import ProblemError, UsageError, list_task_names, load_problem, load_task

from conftest import PROBLEMS, run_cli

FIRST_TASKS = ["level1/layernorm", "level1/matmul", "level1/relu", "level1/softmax", "level1/vector_add"]


def test_builtin_tasks_have_odd_sizes_and_hidden_configs() -> None:
    names = list_task_names()
    assert set(FIRST_TASKS) <= set(names)
    for name in FIRST_TASKS:
        problem = load_task(name)
        assert len(problem.configs) >= 3, name
        assert problem.hidden_configs, name
        sizes = [v for c in problem.all_configs() for v in c[0].values() if isinstance(v, int)]
        assert any(v % 32 for v in sizes), f"{name} has no size off a multiple of 32"
        assert problem.dtype == "float32"
        assert problem.description


def test_kernelbench_file_loads_with_one_default_config() -> None:
    problem = load_problem(PROBLEMS / "kernelbench_style_add.py")
    assert problem.configs == ({},)
    assert problem.hidden_configs == ()
    assert problem.l2_state == "cold"


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "problem.py"
    path.write_text("import torch\nfrom torch import nn\n" + body)
    return path


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("def get_inputs(): return []\n", "no class Model"),
        ("class Model(nn.Module):\n    pass\n", "no function get_inputs"),
        (
            "class Model(nn.Module):\n    pass\ndef get_inputs(n): return []\nCONFIGS = [{'m': 3}]\n",
            "takes no argument named 'm'",
        ),
        (
            "class Model(nn.Module):\n    pass\ndef get_inputs(): return []\nCONFIGS = {'n': 1}\n",
            "list of dicts",
        ),
        (
            "class Model(nn.Module):\n    pass\ndef get_inputs(): return []\nL2_STATE = 'lukewarm'\n",
            "L2_STATE",
        ),
        ("raise RuntimeError('broken on purpose')\n", "broken on purpose"),
    ],
)
def test_broken_problem_files_say_what_is_wrong(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(ProblemError, match=message):
        load_problem(_write(tmp_path, body))


def test_extensions_are_read(tmp_path: Path) -> None:
    body = (
        "class Model(nn.Module):\n    def forward(self, x): return x\n"
        "def get_inputs(n): return [torch.randn(n)]\n"
        "CONFIGS = [{'n': 3}, {'n': 5}]\nHIDDEN_CONFIGS = [{'n': 7}]\n"
        "TOLERANCE = {'float32': {'rtol': 1e-3}}\nDTYPE = 'float32'\nL2_STATE = 'hot'\n"
        "def validate(inputs, output, reference): return None\n"
        "def flops(n): return n\n"
        "EXPERT = 'cublas'\n"
    )
    problem = load_problem(_write(tmp_path, body))
    assert problem.configs == ({"n": 3}, {"n": 5})
    assert problem.hidden_configs == ({"n": 7},)
    assert problem.tolerance == {"float32": {"rtol": 1e-3}}
    assert (problem.l2_state, problem.has_validate, problem.has_flops, problem.expert) == (
        "hot",
        True,
        True,
        "cublas",
    )


def test_unknown_task_names_some_real_ones() -> None:
    with pytest.raises(UsageError, match="did you mean level1/softmax"):
        load_task("level1/sofmax")


def test_tasks_command_lists_every_task() -> None:
    result = run_cli("tasks", "--json")
    assert result.returncode == 0, result.stderr
    import json

    rows = json.loads(result.stdout)["tasks"]
    assert {r["name"] for r in rows} >= set(FIRST_TASKS)
    assert all(r["configs"] >= 3 for r in rows if r["name"] in FIRST_TASKS)
