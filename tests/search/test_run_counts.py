"""One set of counts per run, whoever prints it: `optimize` (its table and --json), `bench` and `report`
(theirs) read one summary, on runs that hold exact duplicates (skipped, never judged), answers with no
code, and verdicts reused from an earlier run's cache. Driven through the CLI, as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PROBLEMS, SOLUTIONS
from fake_llm import FakeLLMServer, Reply, openai_body

PROBLEM = PROBLEMS / "add_small.py"
FAST, SLOW, WRONG, BROKEN = (
    (SOLUTIONS / "optimize" / f"add_{name}.py").read_text()
    for name in ("fast", "slow", "wrong", "compile_error")
)
PROSE = "A vector sum is memory bound: one load of each input and one store per element."
FOREIGN_ENV = ("OPENAI_", "ANTHROPIC_", "CUDASMITH_CONFIG", "CUDASMITH_STORE", "HF_")
MODEL = "openai:fake-coder"
JUDGE = ["--device", "cpu", "--seeds", "1", "--no-timing"]


def fenced(source: str) -> str:
    return f"Here is the kernel.\n\n```python\n{source}```\n"


def cudasmith(server: FakeLLMServer, *args: str) -> subprocess.CompletedProcess[str]:
    """The command in a fresh interpreter, its model served by the fake server."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(FOREIGN_ENV)}
    env.update(OPENAI_BASE_URL=f"{server.url}/v1", OPENAI_API_KEY="sk-fake", COLUMNS="200")
    done = subprocess.run(
        [sys.executable, "-m", "cudasmith", *args], capture_output=True, text=True, timeout=600, env=env
    )
    assert done.returncode in (0, 1), done.stderr
    return done


def report(server: FakeLLMServer, store: Path, run_id: str) -> tuple[dict[str, object], str]:
    """`report RUN --json`'s summary of the run, and `report RUN`'s text."""
    as_json = json.loads(cudasmith(server, "report", run_id, "--store", str(store), "--json").stdout)
    return as_json[run_id], cudasmith(server, "report", run_id, "--store", str(store)).stdout


def shown_in_text(summary: dict[str, object], text: str) -> None:
    """The report's text says the same counts as the JSON: every outcome, judged and cached."""
    counts = summary["counts"]
    assert isinstance(counts, dict)
    line = next(line for line in text.splitlines() if f"{summary['candidates']} candidates on" in line)
    assert line.endswith(", ".join(f"{status} {n}" for status, n in counts.items())), (line, counts)
    assert f"{summary['judged']} judged, {summary['cached']} from the cache" in text, text


@pytest.mark.slow
def test_optimize_bench_and_report_count_a_run_alike(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    search = ["-m", MODEL, "-n", "3", "--depth", "2", *JUDGE, "--store", str(store)]
    with FakeLLMServer().running() as server:
        # A first run fills the evaluation cache: the fast, the wrong and the broken kernel.
        server.push(*(Reply(openai_body(fenced(code))) for code in (FAST, WRONG, BROKEN)))
        server.push(*(Reply(openai_body(PROSE)) for _ in range(3)))
        cudasmith(server, "optimize", "--problem", str(PROBLEM), *search, "--json")

        # The second: the fast kernel again (from the cache) and its exact copy (skipped), prose (no
        # code); then the wrong and broken ones (from the cache) and the slow one (judged).
        server.push(
            Reply(openai_body(fenced(FAST))), Reply(openai_body(fenced(FAST))), Reply(openai_body(PROSE))
        )
        server.push(*(Reply(openai_body(fenced(code))) for code in (WRONG, BROKEN, SLOW)))
        done = cudasmith(server, "optimize", "--problem", str(PROBLEM), *search, "--json")
        optimized = json.loads(done.stdout)
        run_id = str(optimized["run_id"])
        assert optimized["candidates"] == 6
        assert optimized["counts"] == {"correct": 2, "incorrect": 1, "compile_error": 2, "skipped": 1}
        assert (optimized["judged"], optimized["cached"], optimized["attempts"]) == (1, 3, 5)
        assert optimized["statuses"] == {"correct": 2, "incorrect": 1, "compile_error": 2}
        assert optimized["correct"] == 2 and optimized["correctness_rate"] == pytest.approx(2 / 5)

        # `report` says the same of it, in JSON (every key) and in its text.
        reported, text = report(server, store, run_id)
        assert {k: v for k, v in reported.items() if k != "run"} == {
            k: v for k, v in optimized.items() if k != "store"
        }
        shown_in_text(reported, text)

        # A bench of the model on the same task: one request for three answers, the fast kernel twice
        # (cached, then skipped) and the slow one (cached).
        server.push(Reply(openai_body(fenced(FAST), fenced(FAST), fenced(SLOW))))
        bench = ["bench", "--model", MODEL, "--task", str(PROBLEM), "-n", "3", *JUDGE, "--store", str(store)]
        benched = json.loads(cudasmith(server, *bench, "--json").stdout)
        bench_id = str(benched["run"])
        assert benched["counts"] == {"correct": 2, "skipped": 1}
        assert (benched["judged"], benched["cached"], benched["attempts"]) == (0, 2, 2)
        reported, text = report(server, store, bench_id)
        assert {k: v for k, v in reported.items() if k != "run"} == {
            k: v for k, v in benched.items() if k not in ("run", "rejudge")
        }
        shown_in_text(reported, text)
