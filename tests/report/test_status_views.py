"""Every view that colours a status renders every status the store can hold: the verdict statuses, a
config's `not_checked`, and the `skipped` and `unjudged` of candidates without a verdict (a status with no
style once made the markup `[]skipped[/]` and crashed `optimize` at its summary). Then the crash end to
end: `optimize` against a model that answers the same kernel every time."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from cudasmith.harness.verdict import ConfigResult, Verdict
from cudasmith.harness.wire.status import CONFIG_STATUSES, STATUSES
from cudasmith.llm.base import Completion
from cudasmith.llm.client import Usage
from cudasmith.report.ask_table import print_ask
from cudasmith.report.bench_progress import verdict_line
from cudasmith.report.leaderboard import print_leaderboard, print_run_details
from cudasmith.report.optimize_view import print_summary as print_optimize_summary
from cudasmith.report.verdict_table import print_summary, print_verdict, status_markup
from cudasmith.search.ask import AskResult, JudgedAnswer
from cudasmith.search.parsing import ParsedAnswer
from cudasmith.store import CacheKey, Run, RunStore, code_hash
from cudasmith.store.runs import load_run

from conftest import PROBLEMS, SOLUTIONS
from fake_llm import FakeLLMServer, Reply, openai_body

# Beside the verdict statuses: candidates the search skipped (duplicates) and those not judged yet.
NO_VERDICT = ("skipped", "unjudged")
# A status no view knows, with brackets that Rich would read as markup if it were not escaped.
UNKNOWN = "[odd]"


def rendered(print_view: Callable[..., None], *args: object) -> str:
    out = io.StringIO()
    print_view(*args, console=Console(file=out, width=100, emoji=False))
    return out.getvalue()


def a_verdict(status: str) -> Verdict:
    configs = [
        ConfigResult(0, {"n": 8}, False, status=status),
        ConfigResult(1, {"n": 9}, False, status="not_checked"),
    ]
    return Verdict(status, f"a {status} verdict", "level1/relu", f"{status}.py", "cpu", configs=configs)


@pytest.fixture
def store_with_every_status(tmp_path: Path) -> tuple[RunStore, Run]:
    """A search run holding a candidate of every verdict status, a skipped duplicate and one unjudged."""
    store = RunStore(tmp_path / "runs.db")
    run = store.create_run(
        Run(
            kind="optimize",
            task="level1/relu",
            task_version="v",
            device="cpu",
            device_name="cpu",
            harness_version="h",
            strategy="fsr",
            models=["openai:fake"],
        )
    )
    key = CacheKey("v", "cpu", "h", "o")
    first = None
    for status in STATUSES:
        source = f"# {status}"
        candidate = store.add_candidate(run.id, status, "llm", source=source, code_hash=code_hash(source))
        store.record_verdict(candidate.id, a_verdict(status), key, candidate.code_hash, run.id)
        first = first or candidate
    assert first is not None
    store.add_candidate(
        run.id, "again", "llm", source="# correct", skipped=f"a duplicate of candidate {first.id}"
    )
    store.add_candidate(run.id, "later", "llm", source="# later")
    yield store, store.run(run.id)
    store.close()


def test_status_markup_renders_any_string() -> None:
    for status in (*CONFIG_STATUSES, *NO_VERDICT, UNKNOWN, "", "back\\"):
        out = io.StringIO()
        Console(file=out, width=100).print(status_markup(status, width=13))
        assert out.getvalue().rstrip() == status.rstrip()


def test_the_optimize_summary_shows_every_status(store_with_every_status: tuple[RunStore, Run]) -> None:
    store, run = store_with_every_status
    summary = load_run(store, run.id).summary
    assert set(summary.counts.outcomes) == {*STATUSES, *NO_VERDICT}
    text = rendered(print_optimize_summary, summary)
    for status in summary.counts.outcomes:
        assert f"{status} 1" in text, status


def test_the_leaderboard_shows_every_status(store_with_every_status: tuple[RunStore, Run]) -> None:
    store, run = store_with_every_status
    view = load_run(store, run.id)
    assert set(view.summary.statuses) == set(STATUSES)
    rendered(print_leaderboard, [view])
    text = rendered(print_run_details, view)
    for status in view.summary.statuses:
        assert f"{status} " in text, status


def test_the_ask_table_and_verdict_views_show_every_status(tmp_path: Path) -> None:
    verdicts = [a_verdict(status) for status in (*STATUSES, UNKNOWN)]
    candidates = [
        JudgedAnswer(i, Completion("…", "stop", "fake", 10, 10), ParsedAnswer("x", "", "fenced"), v, None)
        for i, v in enumerate(verdicts)
    ]
    result = AskResult(tmp_path / "ask-1", "openai:fake", "level1/relu", "cpu", candidates, Usage(), [], 1.0)
    table = rendered(print_ask, result)
    summary = rendered(print_summary, verdicts)
    for verdict in verdicts:
        assert verdict.status in table and verdict.status in summary
        text = rendered(print_verdict, verdict)
        assert text.startswith(verdict.status) and "not_checked" in text


def test_the_bench_line_shows_every_status(store_with_every_status: tuple[RunStore, Run]) -> None:
    store, run = store_with_every_status
    for candidate in (c for c in store.candidates(run.id) if c.verdict):
        status = str(candidate.status)
        out = io.StringIO()
        Console(file=out, width=200).print(verdict_line(candidate, cached=False))
        assert out.getvalue().startswith(status), out.getvalue()


@pytest.mark.slow
def test_optimize_ends_with_its_summary_when_the_model_repeats_itself(tmp_path: Path) -> None:
    """Every answer is the same kernel, so every candidate after the first is a skipped duplicate."""
    kernel = (SOLUTIONS / "optimize" / "add_fast.py").read_text()
    with FakeLLMServer().running() as server:
        server.default = Reply(openai_body(f"```python\n{kernel}```\n"))
        command = [sys.executable, "-m", "cudasmith", "optimize", "--problem", str(PROBLEMS / "add_small.py")]
        command += ["-m", "openai:fake-coder", "-n", "2", "--depth", "2", "--device", "cpu", "--seeds", "1"]
        command += ["--no-timing", "--store", str(tmp_path / "runs.db"), "-o", str(tmp_path / "best.py")]
        env = {"OPENAI_BASE_URL": f"{server.url}/v1", "OPENAI_API_KEY": "sk-fake", "COLUMNS": "100"}
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=600, env=_environment(env), cwd=tmp_path
        )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "best: candidate" in done.stdout and "skipped 3" in done.stdout, done.stdout
    assert (tmp_path / "best.py").read_text() == kernel


def _environment(extra: dict[str, str]) -> dict[str, str]:
    foreign = ("OPENAI_", "ANTHROPIC_", "CUDASMITH_CONFIG", "CUDASMITH_STORE", "HF_")
    return {**{k: v for k, v in os.environ.items() if not k.startswith(foreign)}, **extra}
