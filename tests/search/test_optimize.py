"""`cudasmith optimize` end to end on the CPU: a fake OpenAI-compatible server serves scripted answers
(prose, a compile error, a wrong kernel, a slow one, a fast one, a cheat), C kernels are judged for
real, and everything lands in the run store.

The FSR case runs the command as a user would, in a fresh interpreter; the others call the Python API.
The judge checks one input set per config, and times only where the test is about speed.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cudasmith.harness.options import EvalOptions
from cudasmith.llm import load_llm_config
from cudasmith.search.config import EvolveConfig, OptimizeConfig, SearchSettings
from cudasmith.search.optimize import optimize
from cudasmith.store import RunStore

from conftest import PROBLEMS, SOLUTIONS
from fake_llm import FakeLLMServer, Reply, Seen, openai_body

KERNELS = SOLUTIONS / "optimize"
PROBLEM = PROBLEMS / "add_small.py"
FAST, SLOW, WRONG, BROKEN, CHEAT = (
    (KERNELS / f"add_{name}.py").read_text() for name in ("fast", "slow", "wrong", "compile_error", "cheat")
)
PROSE = "A vector sum is memory bound: one load of each input and one store per element."
FOREIGN_ENV = ("OPENAI_", "ANTHROPIC_", "CUDASMITH_CONFIG", "CUDASMITH_STORE", "HF_")


def fenced(source: str) -> str:
    return f"Here is the kernel.\n\n```python\n{source}```\n"


def answer(text: str, **reply: object) -> Reply:
    return Reply(openai_body(text), **reply)  # type: ignore[arg-type]


def environment(server: FakeLLMServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(FOREIGN_ENV)}
    return {**env, "OPENAI_BASE_URL": f"{server.url}/v1", "OPENAI_API_KEY": "sk-fake"}


def user_prompt(seen: Seen) -> str:
    return next(m["content"] for m in seen.body["messages"] if m["role"] == "user")


def proposals(server: FakeLLMServer) -> list[Seen]:
    return [s for s in server.seen if s.body["model"] == "fake-coder"]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    with FakeLLMServer().running() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{fake.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
        for name in ("CUDASMITH_CONFIG", "CUDASMITH_STORE"):
            monkeypatch.delenv(name, raising=False)
        yield fake


def review(seen: Seen) -> Reply | None:
    """The verifier's opinions: it fails the compile error, the wrong and the slow kernel (a false
    alarm), and passes the fast one and the cheat (a miss)."""
    if seen.body["model"] != "fake-verifier":
        return None
    prompt = user_prompt(seen)
    flagged = any(mark in prompt for mark in ("undeclared_offset", "a[i] - b[i]", "repeat < 64"))
    opinion = {"verdict": "fail" if flagged else "pass", "reason": "looked at it"}
    return answer(json.dumps(opinion))


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["local", "ray"])
def test_fsr_finds_the_fast_kernel_and_feeds_failures_and_parent_forward(
    server: FakeLLMServer, tmp_path: Path, executor: str
) -> None:
    """The same scripted run through either executor: the same best kernel, the same verdicts (the ray
    case on a Ray instance the run starts and stops; CI installs Ray with .[dev])."""
    if executor == "ray":
        pytest.importorskip("ray", reason="the Ray executor needs Ray (pip install 'cudasmith[ray]')")
    server.responder = review
    server.push(*(answer(text) for text in (PROSE, fenced(BROKEN), fenced(WRONG))))
    server.push(*(answer(fenced(source)) for source in (SLOW, FAST, CHEAT)))
    best = tmp_path / "best.py"
    command = [sys.executable, "-m", "cudasmith", "optimize", "--problem", str(PROBLEM)]
    command += ["-m", "openai:fake-coder", "--verifier", "openai:fake-verifier", "-n", "3", "--depth", "2"]
    command += [
        "--device",
        "cpu",
        "--seeds",
        "1",
        "--store",
        str(tmp_path / "runs.db"),
        "-o",
        str(best),
        "--json",
        "--executor",
        executor,
        "--confirm-all",  # every correct kernel timed in full: the fast one's speedup, however fast this CPU
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=environment(server))
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)

    assert best.read_text() == FAST, "the fast kernel wins and is written to -o"
    assert summary["best_path"] == str(best) and summary["best_speedup"] > 0
    assert summary["counts"] == {"compile_error": 2, "correct": 2, "incorrect": 1, "rejected": 1}
    assert summary["stop_reason"] == "all 2 rounds run"
    assert summary["cost"]["usd"] is None and summary["cost"]["unpriced_answers"] == 11, "unknown, not 0"
    assert summary["judge"]["idle_waiting_s"] >= 0 and summary["judged"] == 5
    lanes = summary["executor"]
    assert lanes["kind"] == executor and [lane["judged"] for lane in lanes["lanes"]] == [5]
    assert lanes["builds"]["built"] >= 3, "the C kernels were built ahead (the compile errors fail to)"
    verifier = summary["verifier"]
    assert verifier["precision"] == pytest.approx(2 / 3) and verifier["recall"] == pytest.approx(2 / 3)
    assert (verifier["flagged_but_correct"], verifier["passed_but_failed"]) == (1, 1)

    first, second = proposals(server)[:3], proposals(server)[3:]
    assert len(second) == 3 and all("## The current solution" not in user_prompt(s) for s in first)
    for seen in second:
        prompt = user_prompt(seen)
        assert "a[i] - b[i]" in prompt and "values differ" in prompt, "the parent and its verdict"
        assert "## Other attempts that failed" in prompt
        assert "undeclared_offset" in prompt and "no solution in the answer" in prompt, "the failures"
        assert "It computes a wrong answer" in prompt

    assert summary["best"]["round"] == 2, "the fast kernel came in round 2 of 2, as the panel counts"
    assert "judge" in summary and summary["judge"]["candidate_s"] > 0
    with RunStore(tmp_path / "runs.db") as store:
        [run] = store.runs()
        candidates = store.candidates(run.id)
        winner = next(c for c in candidates if c.source == FAST)
        # One file per candidate in the run's folder, named by the number the summary gives it.
        folder = tmp_path / run.id
        assert summary["best"]["candidate"] == winner.id
        assert (folder / f"candidate_{winner.id}.py").read_text() == FAST
        for candidate in candidates:
            assert (folder / f"candidate_{candidate.id}.response.md").is_file()
            assert (folder / f"candidate_{candidate.id}.py").is_file() == (candidate.source is not None)
            assert (folder / f"candidate_{candidate.id}.verdict.json").is_file()
        [turn_one, turn_two] = store.chain(winner.id)
        assert "a[i] - b[i]" in str(turn_one.source) and turn_two.status == "correct"
        assert "a[i] - b[i]" in turn_two.messages[1]["content"], "the chain links prompt to parent"


def evolve_config() -> OptimizeConfig:
    # No view lag: each proposal waits for, and sees, every verdict before it.
    islands = EvolveConfig(islands=2, migration_interval=1, exploitation=0.5, exploration=0.5, view_lag=0)
    return OptimizeConfig(strategy="evolve", n=2, depth=2, max_in_flight=1, max_queued=1, evolve=islands)


def edit(replacement: str) -> str:
    return f"<<<<<<< SEARCH\nclass ModelNew(nn.Module):\n=======\n{replacement}\nclass ModelNew(nn.Module):\n>>>>>>> REPLACE\n"


@pytest.mark.slow
def test_evolve_runs_two_islands_migrates_and_judges_no_duplicate(
    server: FakeLLMServer, tmp_path: Path
) -> None:
    # Islands 0 and 1 start from the fast and the slow kernel; then an edit that adds code (new, judged)
    # and one that adds only a comment (its parent again: not judged). Parents and operators are drawn
    # from the run's seed: seed 1 gives island 0 the fast kernel to edit, not a crossover.
    answers = (fenced(FAST), fenced(SLOW), edit("SCALE = 1.0\n"), edit("# The same kernel."))
    server.push(*(answer(text) for text in answers))
    judge = EvalOptions(device="cpu", seeds_per_config=1, timing=False, seed=1)
    result = optimize(
        PROBLEM, "openai:fake-coder", SearchSettings(evolve_config(), judge), store=tmp_path / "runs.db"
    )
    assert result.summary.counts.outcomes == {"correct": 3, "skipped": 1}
    assert result.summary.counts.judged == 3 and result.summary.stop_reason == "all 4 proposals made"
    with RunStore(result.store_path) as store:
        fast, slow, edited, repeated = store.candidates(result.run_id)
        assert [c.island for c in (fast, slow, edited, repeated)] == [0, 1, 0, 1]
        assert (fast.operator, slow.operator) == ("first", "first")
        assert edited.parents == [fast.id] and edited.source == FAST.replace(
            "class ModelNew", "SCALE = 1.0\n\nclass ModelNew"
        )
        assert edited.operator in ("diff", "rewrite") and edited.status == "correct"
        assert repeated.skipped == f"a duplicate of candidate {repeated.parents[0]}"
        migration = store.events(result.run_id, "migration")[0]
        moves = {(m["candidate"], m["from"], m["to"]) for m in migration.data["moves"]}
        assert moves == {(fast.id, 0, 1), (slow.id, 1, 0)}
    last = user_prompt(proposals(server)[3])
    assert "## The current solution" in last and "## Other solutions found so far" in last
    assert "add_fast" in last and "add_slow" in last, "the parent and an inspiration from the other island"


def test_the_budget_stops_the_run_and_a_resume_keeps_to_it(server: FakeLLMServer, tmp_path: Path) -> None:
    server.default = answer(PROSE)
    # 100 tokens in and 50 out per answer: US$0.006 each, so the third call would pass US$0.01.
    priced = load_llm_config(prices={"openai:fake-coder": {"input": 10.0, "output": 100.0}})
    search = OptimizeConfig(n=1, depth=10)
    settings = SearchSettings(search, EvalOptions(device="cpu"), llm=priced, budget_usd=0.01)
    result = optimize(PROBLEM, "openai:fake-coder", settings, store=tmp_path / "runs.db")
    assert len(server.seen) == 2
    assert str(result.summary.stop_reason).startswith("the budget of $0.01 is spent")
    assert result.summary.cost is not None and result.summary.cost.total.usd == pytest.approx(0.012)
    assert result.summary.cost.by_model["openai:fake-coder"].completions == 2
    again = optimize(settings=settings, store=tmp_path / "runs.db", resume=result.run_id)
    assert len(server.seen) == 2, "money spent before the resume counts"
    assert str(again.summary.stop_reason).startswith("the budget of $0.01 is spent")


def _verdicts_stored(store: Path) -> int:
    try:
        with sqlite3.connect(store) as db:
            return db.execute("SELECT count(*) FROM verdicts WHERE code_hash IS NOT NULL").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


@pytest.mark.slow
@pytest.mark.parametrize("judged", [1, 2], ids=["one-judged", "both-judged"])
def test_resume_after_kill_9_repeats_no_stored_call_and_no_stored_verdict(
    server: FakeLLMServer, tmp_path: Path, judged: int
) -> None:
    """Killed in round 0 with one answer unanswered and `judged` of the two others judged (the second case
    once passed or failed by which verdict landed first: a judged candidate was not remembered on resume,
    so round 1's copy of it was judged again)."""
    store = tmp_path / "runs.db"
    server.push(answer(fenced(FAST)), answer(fenced(WRONG)), Reply(hang=True))
    command = [
        sys.executable,
        "-m",
        "cudasmith",
        "optimize",
        "--problem",
        str(PROBLEM),
        "-m",
        "openai:fake-coder",
    ]
    command += [
        "-n",
        "3",
        "--depth",
        "2",
        "--device",
        "cpu",
        "--seeds",
        "1",
        "--no-timing",
        "--store",
        str(store),
    ]
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment(server))
    deadline = time.monotonic() + 600
    while _verdicts_stored(store) < judged or len(server.seen) < 3:
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.2)
    first.send_signal(signal.SIGKILL)  # in the middle of round 0: one answer unanswered
    first.wait()
    with RunStore(store) as opened:
        [run] = opened.runs()
        assert run.status == "running"
        judged_before = {v.code_hash for v in opened.verdicts(run.id) if v.code_hash}

    # The unanswered call is asked again; round 1 gets a duplicate of the fast kernel and prose.
    server.push(answer(PROSE), answer(fenced(FAST)), answer(PROSE), answer(PROSE))
    resumed = subprocess.run(
        [sys.executable, "-m", "cudasmith", "optimize", "--resume", run.id, "--store", str(store), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        env=environment(server),
    )
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(resumed.stdout)
    assert summary["counts"] == {"compile_error": 3, "correct": 1, "incorrect": 1, "skipped": 1}
    lines = [line for line in resumed.stderr.splitlines() if "judged" in line and "best" in line]
    assert lines and all(line.startswith("optimize add_small: round ") for line in lines), resumed.stderr
    requests = [user_prompt(s) for s in server.seen]
    assert len(requests) == 7, "3 before the kill, the unanswered one again, then round 1"
    assert requests[3] == requests[2], "the unanswered call is sent again as it was stored"
    with RunStore(store) as opened:
        [repeat] = [c for c in opened.candidates(run.id) if c.skipped]
        assert (tmp_path / run.id / f"candidate_{repeat.id}.py").read_text() == FAST, "a repeat's file too"
        hashes = [v.code_hash for v in opened.verdicts(run.id) if v.code_hash]
        assert len(hashes) == len(set(hashes)) == 2, "no verdict judged twice"
        assert judged_before <= set(hashes)
        assert opened.run(run.id).status == "finished"


def test_optimize_takes_one_settings_object() -> None:
    """What a search is told travels in one SearchSettings: the entry point stays narrow."""
    import inspect

    parameters = inspect.signature(optimize).parameters
    assert len(parameters) <= 8, list(parameters)
    assert "settings" in parameters and not {"strategy", "n", "depth", "device", "executor"} & set(parameters)
