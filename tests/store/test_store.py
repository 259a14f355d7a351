"""The run store: schema and migrations, calls and candidates kept across a reopen, the evaluation cache,
baselines taken from verdicts, and a candidate's multi-turn chain."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cudasmith.errors import UsageError
from cudasmith.harness.verdict import ConfigResult, Verdict
from cudasmith.harness.wire.results import BaselineEntry
from cudasmith.harness.wire.status import Status
from cudasmith.store import SCHEMA_VERSION, CacheKey, Run, RunStore, code_hash, default_store_path

KEY = CacheKey(task_version="t1", device_name="cpu0", harness_version="h1", judge_options="o1")


def new_run(store: RunStore, **overrides: object) -> Run:
    fields = {
        "kind": "optimize",
        "task": "level1/relu",
        "task_version": "t1",
        "device": "cpu",
        "device_name": "cpu0",
        "harness_version": "h1",
        "strategy": "fsr",
        "models": ["openai:fake"],
        "options": {"n": 2},
        "secret_seed": 1234,
        **overrides,
    }
    return store.create_run(Run(**fields))  # type: ignore[arg-type]


def verdict(status: str, speedup: float | None = None) -> Verdict:
    eager = BaselineEntry(time_ms=0.5, ci95_ms=[0.4, 0.6], sol_pct=12.0)
    configs = [ConfigResult(0, {"n": 8}, False, Status(status), baselines={"eager": eager})]
    return Verdict(Status(status), status, "level1/relu", "x.py", "cpu", speedup=speedup, configs=configs)


def test_default_path_and_schema_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDASMITH_STORE", raising=False)
    assert default_store_path() == Path("runs/cudasmith.db")
    monkeypatch.setenv("CUDASMITH_STORE", str(tmp_path / "elsewhere.db"))
    with RunStore() as store:
        assert store.path == tmp_path / "elsewhere.db"
        assert store.schema_version == SCHEMA_VERSION
    mode = sqlite3.connect(tmp_path / "elsewhere.db").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_a_store_from_a_newer_cudasmith_or_another_file_is_refused(tmp_path: Path) -> None:
    newer = tmp_path / "newer.db"
    sqlite3.connect(newer).execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(UsageError, match="made by a newer cudasmith"):
        RunStore(newer)
    junk = tmp_path / "junk.db"
    junk.write_text("not a database at all, " * 100)
    with pytest.raises(UsageError, match="not a cudasmith run store"):
        RunStore(junk)


def test_calls_candidates_and_verdicts_survive_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with RunStore(path) as store:
        run = new_run(store)
        request = {"messages": [{"role": "user", "content": "write relu"}], "n": 1}
        call = store.start_call(run.id, "r0/c0", "propose", "openai:fake", request, {"round": 0})
        assert call.status == "pending" and call.completions == []
        again = store.start_call(run.id, "r0/c0", "propose", "openai:fake", {"other": 1}, {})
        assert again.id == call.id and again.request == request, "a stored call is returned, not replaced"
        answer = {"text": "```python\n...```", "finish_reason": "stop", "model": "fake", "cost_usd": None}
        store.finish_call(call.id, [answer])
        candidate = store.add_candidate(
            run.id,
            "r0/c0/0",
            "llm",
            round=0,
            operator="first",
            completion_id=1,
            source="code",
            code_hash=code_hash("code"),
            parse={"kind": "file"},
        )
        store.record_verdict(candidate.id, verdict("correct", 1.5), KEY, candidate.code_hash, run.id, 2.0)
        store.update_candidate(candidate.id, observed=0, meta={"ptxas": {"registers": 12}})
        store.add_event(run.id, "round/0", "round", {"best": candidate.id})
        store.add_event(run.id, "round/0", "round", {"best": None})
        store.update_run(run.id, status="finished", stop_reason="depth reached", summary={"best": 1})

    with RunStore(path) as store:
        [stored] = store.runs(kind="optimize")
        assert (stored.id, stored.status, stored.summary, stored.secret_seed) == (
            run.id,
            "finished",
            {"best": 1},
            1234,
        )
        [call] = store.calls(run.id, "propose")
        assert call.status == "done" and call.completions[0].text.startswith("```python")
        assert call.completions[0].cost_usd is None, "an unknown price stays unknown"
        [candidate] = store.candidates(run.id)
        assert candidate.status == "correct" and candidate.meta == {"ptxas": {"registers": 12}}
        assert candidate.observed == 0 and not candidate.verdict_cached
        assert [e.data for e in store.events(run.id)] == [{"best": candidate.id}], "one event per key"
        with pytest.raises(UsageError, match=f"latest: {run.id}"):
            store.run("optimize-nope")


def test_the_evaluation_cache_matches_code_task_device_judge_and_options(tmp_path: Path) -> None:
    with RunStore(tmp_path / "store.db") as store:
        run = new_run(store)
        first = store.add_candidate(run.id, "a", "llm", source="code", code_hash=code_hash("code"))
        verdict_id = store.record_verdict(first.id, verdict("incorrect"), KEY, first.code_hash, run.id)
        assert store.cached_verdict(code_hash("code"), KEY).id == verdict_id  # type: ignore[union-attr]
        for changed in (
            CacheKey("t2", "cpu0", "h1", "o1"),
            CacheKey("t1", "gpu0", "h1", "o1"),
            CacheKey("t1", "cpu0", "h2", "o1"),
            CacheKey("t1", "cpu0", "h1", "o2"),
        ):
            assert store.cached_verdict(code_hash("code"), changed) is None
        assert store.cached_verdict(code_hash("code "), KEY) is None

        second_run = new_run(store)
        second = store.add_candidate(second_run.id, "a", "llm", source="code", code_hash=code_hash("code"))
        store.use_cached_verdict(second.id, verdict_id)
        [reused] = store.candidates(second_run.id)
        assert reused.verdict_cached and reused.status == "incorrect"
        assert store.verdicts(second_run.id) == [], "a cache hit is not a run of the judge"
        [baseline] = store.baselines("t1", "cpu0")
        assert (baseline.name, baseline.time_ms, baseline.config) == ("eager", 0.5, {"n": 8})


def test_a_candidates_chain_runs_from_the_first_prompt(tmp_path: Path) -> None:
    with RunStore(tmp_path / "store.db") as store:
        run = new_run(store)
        ids = []
        for turn in range(3):
            messages = [{"role": "user", "content": f"prompt {turn}"}]
            call = store.start_call(run.id, f"c{turn}", "propose", "m", {"messages": messages}, {})
            store.finish_call(call.id, [{"text": f"answer {turn}"}])
            completion_id = store.call(run.id, f"c{turn}").completions[0].id  # type: ignore[union-attr]
            candidate = store.add_candidate(
                run.id,
                f"k{turn}",
                "llm",
                parents=ids[-1:],
                completion_id=completion_id,
                source=f"code {turn}",
                operator="refine" if ids else "first",
            )
            store.record_verdict(candidate.id, verdict("incorrect"), KEY, None, run.id)
            ids.append(candidate.id)
        chain = store.chain(ids[-1])
        assert [t.candidate_id for t in chain] == ids
        assert [t.messages[0]["content"] for t in chain] == ["prompt 0", "prompt 1", "prompt 2"]
        assert [t.response for t in chain] == ["answer 0", "answer 1", "answer 2"]
        assert chain[1].parents == [ids[0]] and chain[2].status == "incorrect"
        assert chain[2].verdict is not None and chain[2].verdict.reason == "incorrect"


def test_a_second_process_reads_while_a_run_writes(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with RunStore(path) as store:
        run = new_run(store)
        reader = "import sys; from cudasmith.store import RunStore; print(len(RunStore(sys.argv[1]).runs()))"
        new_run(store)
        done = subprocess.run(
            [sys.executable, "-c", reader, str(path)], capture_output=True, text=True, check=True
        )
        assert done.stdout.strip() == "2"
        assert store.run(run.id).task == "level1/relu"


def test_verdicts_stored_before_rules_were_named_get_theirs_once(tmp_path: Path) -> None:
    """A store of schema 2 (verdicts without `rule`) brought up to date: each intact verdict gets the rule of
    its reason, with a MAC that still vouches for it; a row that failed its MAC stays as it was."""
    from cudasmith.store.integrity import VERDICT_COLUMNS, verdict_mac
    from cudasmith.store.schema import MIGRATIONS

    path = tmp_path / "old.db"
    db = sqlite3.connect(path, isolation_level=None)
    for number in (0, 1):
        db.executescript(f"BEGIN;\n{MIGRATIONS[number]}\nPRAGMA user_version = {number + 1};\nCOMMIT;")
    rejected = {"status": "rejected", "reason": "config 1 {}: input 0 was modified by forward", "configs": [
        {"index": 0, "config": {}, "hidden": False, "status": "correct", "reason": "matches"},
        {"index": 1, "config": {}, "hidden": False, "status": "rejected",
         "reason": "config 1 {}: input 0 was modified by forward"},
    ]}  # fmt: skip
    stored = [
        (rejected, True),
        ({"status": "incorrect", "reason": "values differ", "configs": []}, True),
        ({"status": "rejected", "reason": "the solution replaced torch.allclose", "configs": []}, False),
    ]
    for verdict_data, intact in stored:
        columns = {"code_hash": "c", **KEY.__dict__, "run_id": "old", "status": verdict_data["status"],
                   "speedup": None, "verdict": json.dumps(verdict_data)}  # fmt: skip
        mac = verdict_mac(columns) if intact else "forged"
        names = [*VERDICT_COLUMNS, "mac", "created_at"]
        db.execute(
            f"INSERT INTO verdicts ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
            [*(columns[name] for name in VERDICT_COLUMNS), mac, "2026-11-01T00:00:00"],
        )
    db.close()
    with RunStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION
        records = sorted(store.verdicts("old"), key=lambda record: record.id)
    first, second, third = records[0].verdict, records[1].verdict, records[2]
    assert first is not None and second is not None
    assert first.rule == "input-mutation" and [c.rule for c in first.configs] == [None, "input-mutation"]
    assert second.rule == "wrong-answer"
    assert third.tampered and third.verdict is None  # not vouched for by a new MAC, nor given a rule
