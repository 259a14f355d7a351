"""What uses a running `cudasmith serve`: `eval --server`, the OpenEvolve evaluator and the RL reward function
of examples/ (called directly, as OpenEvolve and TRL call them; neither is installed here)."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from cudasmith.report.export import CORRECT_BONUS

from conftest import EXAMPLES, SOLUTIONS, run_cli
from served import QUICK, Server

TASK = "level1/vector_add"
HONEST = SOLUTIONS / "vector_add_cpu.py"
WRONG = SOLUTIONS / "vector_add_misses_tail.py"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with Server(tmp_path_factory.mktemp("served") / "store.db") as running:
        yield running


@pytest.fixture
def settings(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDASMITH_SERVER", server.url)
    monkeypatch.setenv("CUDASMITH_TASK", TASK)
    monkeypatch.setenv("CUDASMITH_OPTIONS", json.dumps(QUICK))


def example(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_openevolve_evaluator_scores_a_program_file(settings: None) -> None:
    evaluator = example(EXAMPLES / "openevolve" / "evaluator.py")
    honest = evaluator.evaluate(str(HONEST))
    assert honest["combined_score"] == CORRECT_BONUS and honest["correct"] == 1.0, "correct, untimed"
    assert all(isinstance(value, float) for value in honest.values())
    wrong = evaluator.evaluate(str(WRONG))
    assert wrong["combined_score"] == 0.0 and wrong["correct"] == 0.0


@pytest.mark.slow
def test_the_rl_reward_takes_completions_and_gives_one_float_each(settings: None) -> None:
    reward = example(EXAMPLES / "rl" / "reward.py")
    fenced = f"Here is a faster kernel:\n\n```python\n{HONEST.read_text()}```\n"
    conversational = [{"role": "assistant", "content": f"```python\n{WRONG.read_text()}```"}]
    prose = "I would use shared memory, but I have not written the kernel."
    rewards = reward.kernel_reward([fenced, conversational, prose, fenced], task=[TASK] * 4)
    assert rewards == [CORRECT_BONUS, 0.0, 0.0, CORRECT_BONUS]
    assert reward.kernel_reward([fenced]) == [CORRECT_BONUS], "the task from CUDASMITH_TASK"


@pytest.mark.slow
def test_eval_with_server_prints_what_eval_prints(server: Server, tmp_path: Path) -> None:
    judged = run_cli("eval", str(HONEST), str(WRONG), "--task", TASK, "--server", server.url, "--json",
                     "--no-timing", "--seeds", "1", "--time-limit", "5")  # fmt: skip
    assert judged.returncode == 1, judged.stderr
    verdicts = [json.loads(line) for line in judged.stdout.splitlines()]
    assert [(v["status"], v["solution"]) for v in verdicts] == [
        ("correct", HONEST.name),
        ("incorrect", WRONG.name),
    ]
    refused = run_cli("eval", str(HONEST), "--task", TASK, "--server", server.url, "--device", "cpu")
    assert refused.returncode == 2 and "the server's own" in refused.stderr
    unknown = run_cli("eval", str(HONEST), "--task", "level1/vectoradd", "--server", server.url)
    assert unknown.returncode == 2 and "did you mean level1/vector_add" in unknown.stderr
