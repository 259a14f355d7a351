"""`cudasmith bench --model`: a fake OpenAI-compatible server answers, the optimize driver searches each
task (one-shot here), CPU kernels are judged for real, and the bench reads the searches together:
pass@k, rules, cost, resume, export."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cudasmith.bench.model import bench_model
from cudasmith.bench.tasks import select_problems
from cudasmith.errors import UsageError
from cudasmith.harness.options import EvalOptions
from cudasmith.llm import load_llm_config
from cudasmith.report.export import trajectory_rows
from cudasmith.search.config import OptimizeConfig, SearchSettings
from cudasmith.store import RunStore
from cudasmith.store.runs import load_run, task_runs

from conftest import run_cli
from fake_llm import FakeLLMServer, Reply, openai_body
from solution_folders import PROBLEMS, solution

MODEL = "openai:fake-coder"
# 100 tokens in and 50 out per request (fake_llm's default usage) at these prices: US$0.006 a request.
PRICES = {MODEL: {"input": 10.0, "output": 100.0}}
QUICK = EvalOptions(device="cpu", seeds_per_config=1, timing=False)
PROSE = "ReLU is max(x, 0) elementwise; it is memory bound."


def fenced(name: str) -> str:
    return f"Here is the kernel.\n\n```python\n{solution(name).read_text()}```\n"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    with FakeLLMServer().running() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{fake.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
        for name in ("CUDASMITH_CONFIG", "CUDASMITH_STORE"):
            monkeypatch.delenv(name, raising=False)
        yield fake


def test_selecting_tasks_by_level_name_or_file(tmp_path: Path) -> None:
    names = [p.name for p in select_problems("level1", [])]
    assert "level1/relu" in names and all(n.startswith("level1/") for n in names)
    problem_file = PROBLEMS / "kernelbench_style_add.py"
    relu, added = select_problems(None, ["level1/relu", "level1/relu", str(problem_file)])
    assert relu.name == "level1/relu" and added.path == problem_file
    with pytest.raises(UsageError, match="unknown task 'level1/nope'"):
        select_problems(None, ["level1/nope"])
    with pytest.raises(UsageError, match="choose the tasks"):
        select_problems(None, [])


@pytest.mark.slow
def test_a_model_over_two_tasks_one_shot(server: FakeLLMServer, tmp_path: Path) -> None:
    # Two answers per task: ReLU honest and in place (a cheat); the vector sum through PyTorch (a cheat)
    # and an answer with no code at all.
    server.push(
        Reply(openai_body(fenced("honest_relu.py"), fenced("mutate_in_place.py"))),
        Reply(openai_body(fenced("torch_operator.py"), PROSE)),
    )
    problems = select_problems(None, ["level1/relu", "level1/vector_add"])
    priced = load_llm_config(prices=PRICES)
    settings = SearchSettings(OptimizeConfig(strategy="one-shot", n=2), QUICK, llm=priced, budget_usd=1.0)
    with RunStore(tmp_path / "runs.db") as store:
        result = bench_model(store, problems, (MODEL,), settings)
        bench = load_run(store, result.run_id)
        searches = task_runs(store, store.run(result.run_id))
        assert sorted(searches) == ["level1/relu", "level1/vector_add"]
        assert all(r.kind == "optimize" and r.strategy == "one-shot" for r in searches.values())
        bench_folder = Path(store.run(result.run_id).directory or "")
        assert bench_folder.parent == tmp_path, "the bench run's folder is beside the store"
        assert all(Path(r.directory or "").parent == bench_folder for r in searches.values()), (
            "its searches' inside"
        )
        rows = trajectory_rows(store, result.run_id)

    assert [body.body["n"] for body in server.seen] == [2, 2]
    statuses = sorted((a.task, a.status) for a in bench.attempts)
    assert statuses == [
        ("level1/relu", "correct"),
        ("level1/relu", "rejected"),
        ("level1/vector_add", "compile_error"),
        ("level1/vector_add", "rejected"),
    ]
    summary = bench.summary
    assert summary.rules == {"input-mutation": 1, "pytorch-compute": 1}
    assert summary.pass_at_k == pytest.approx({"pass@1": (0.5 + 0.0) / 2, "pass@2": (1.0 + 0.0) / 2})
    assert summary.cost is not None and summary.cost.total.usd == pytest.approx(0.012)
    assert summary.cost_per_correct_usd == pytest.approx(
        0.012
    ) and summary.cost_per_task_usd == pytest.approx(0.006)
    assert [(r["task"], r["turn"], r["status"]) for r in rows] == [
        ("level1/relu", 0, "correct"),
        ("level1/relu", 0, "rejected"),
        ("level1/vector_add", 0, "rejected"),
        ("level1/vector_add", 0, "compile_error"),
    ]

    # Four verdicts: three from the judge, one for the answer with no code.
    assert (result.counts.judged, result.counts.cached) == (3, 0)
    assert result.counts.attempts == 4, "and a verdict for the answer with no code, without judging"
    # A finished bench resumed asks nothing and judges nothing again.
    with RunStore(tmp_path / "runs.db") as store:
        again = bench_model(store, resume=result.run_id, settings=SearchSettings(llm=priced))
        assert (again.run_id, again.counts.judged, again.counts.cached) == (result.run_id, 3, 0)
        assert load_run(store, result.run_id).summary == summary
    assert len(server.seen) == 2


@pytest.mark.slow
def test_model_and_folder_options_do_not_mix(tmp_path: Path) -> None:
    store = ["--store", str(tmp_path / "runs.db"), "--device", "cpu"]
    both = run_cli("bench", str(tmp_path), "--model", MODEL, "--task", "level1/relu", *store)
    assert both.returncode == 2 and "a folder of solutions or --model, not both" in both.stderr
    level = run_cli("bench", str(tmp_path), "--level", "level1", *store)
    assert level.returncode == 2 and "--level and --task choose tasks for --model" in level.stderr
    unknown = run_cli("bench", "--model", MODEL, "--task", "level1/nope", *store)
    assert unknown.returncode == 2 and "unknown task 'level1/nope'" in unknown.stderr
