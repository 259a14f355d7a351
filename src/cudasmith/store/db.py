"""`RunStore`: the SQLite file behind every run (schema in `cudasmith.store`'s docstring).

Each write is one transaction, committed before the method returns, so a run killed at any moment
(kill -9 included) finds every stored answer and verdict again. WAL mode lets readers (`report`, a
second `bench` process) work while a run writes; writers wait their turn up to BUSY_TIMEOUT_S.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from cudasmith.errors import UsageError
from cudasmith.harness.verdict import Verdict
from cudasmith.jsontypes import JsonDict
from cudasmith.store.integrity import CANDIDATE_SELECT, masked_seed, verdict_mac
from cudasmith.store.records import (
    BaselineTime,
    CacheKey,
    CallRecord,
    CandidateRecord,
    CompletionRecord,
    EventRecord,
    Run,
    Turn,
    VerdictRecord,
)
from cudasmith.store.schema import migrate
from cudasmith.store.shapes import CompletionFields, SqlValue, StoredProposal, StoredRequest, VerifyMeta
from cudasmith.timestamps import STORE_TIMESPEC, now_iso

# Where the store lives unless --store or this variable says otherwise (relative to the working
# directory, beside the run directories of `ask` and `optimize`).
STORE_ENV = "CUDASMITH_STORE"
DEFAULT_STORE = Path("runs") / "cudasmith.db"
# A writer waits this long for another process's transaction before giving up.
BUSY_TIMEOUT_S = 60.0


def default_store_path() -> Path:
    """$CUDASMITH_STORE, else ./runs/cudasmith.db."""
    return Path(os.environ.get(STORE_ENV) or DEFAULT_STORE)


def new_run_id(kind: str) -> str:
    """A fresh run id such as `optimize-20260101-120000-ab12` (also the name of its run directory)."""
    return f"{kind}-{datetime.now().strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def _dumps(value: object) -> str:
    return json.dumps(value, sort_keys=True)


def _insert(db: sqlite3.Connection, table: str, values: Mapping[str, SqlValue], ignore: bool = False) -> int:
    """INSERT one row of `values` (column: value); OR IGNORE keeps a row already stored under its key."""
    verb = "INSERT OR IGNORE" if ignore else "INSERT"
    marks = ", ".join("?" * len(values))
    cursor = db.execute(f"{verb} INTO {table} ({', '.join(values)}) VALUES ({marks})", tuple(values.values()))
    return int(cursor.lastrowid or 0)


class RunStore:
    """Runs, LLM calls, candidates, verdicts and baselines in one SQLite file; safe to share between
    threads of a process (one lock) and between processes (SQLite's locks)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        try:
            self._db = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            self._db.row_factory = sqlite3.Row
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            migrate(self._db, self.path)
        except sqlite3.DatabaseError as exc:
            raise UsageError(f"{self.path}: not a cudasmith run store ({exc})") from None

    @property
    def schema_version(self) -> int:
        """The file's schema version."""
        return self._db.execute("PRAGMA user_version").fetchone()[0]

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _rows(self, sql: str, *args: Any) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    # Runs.

    def create_run(self, run: Run) -> Run:
        """Store a new run (an id is made when it has none) and return it as stored."""
        run.id = run.id or new_run_id(run.kind)
        run.created_at = run.updated_at = now_iso(STORE_TIMESPEC)
        columns = {k: v for k, v in asdict(run).items() if k not in ("stop_reason", "summary")}
        columns["secret_seed"] = masked_seed(run.secret_seed, run.id)  # never in clear in the file
        columns["seed_masked"] = 1
        for name in ("models", "options", "versions"):
            columns[name] = _dumps(columns[name])
        with self._write() as db:
            _insert(db, "runs", columns)
        return run

    def run(self, run_id: str) -> Run:
        """A stored run; a UsageError naming the latest runs, newest first, when there is no such run."""
        rows = self._rows("SELECT * FROM runs WHERE id = ?", run_id)
        if not rows:
            latest = ", ".join(r.id for r in reversed(self.runs()[-3:])) or "none yet"
            raise UsageError(f"no run {run_id!r} in {self.path} (latest: {latest})")
        return Run.from_row(rows[0])

    def runs(self, kind: str | None = None, task: str | None = None) -> list[Run]:
        """Stored runs, oldest first, optionally of one kind and task."""
        rows = self._rows(
            "SELECT * FROM runs WHERE (? IS NULL OR kind = ?) AND (? IS NULL OR task = ?) ORDER BY created_at",
            kind,
            kind,
            task,
            task,
        )
        return [Run.from_row(r) for r in rows]

    def update_run(
        self,
        run_id: str,
        status: str | None = None,
        stop_reason: str | None = None,
        summary: JsonDict | None = None,
    ) -> None:
        """Set a run's status, why it stopped and its summary (each left alone when None)."""
        with self._write() as db:
            db.execute(
                "UPDATE runs SET status = COALESCE(?, status), stop_reason = COALESCE(?, stop_reason), "
                "summary = COALESCE(?, summary), updated_at = ? WHERE id = ?",
                (
                    status,
                    stop_reason,
                    None if summary is None else _dumps(summary),
                    now_iso(STORE_TIMESPEC),
                    run_id,
                ),
            )

    # LLM calls.

    def start_call(
        self,
        run_id: str,
        key: str,
        purpose: str,
        model: str,
        request: StoredRequest,
        meta: StoredProposal | VerifyMeta,
    ) -> CallRecord:
        """Store a call before it is sent, or return the one stored under the same key (resume)."""
        with self._write() as db:
            _insert(
                db,
                "llm_calls",
                {
                    "run_id": run_id,
                    "key": key,
                    "purpose": purpose,
                    "model": model,
                    "request": _dumps(request),
                    "meta": _dumps(meta),
                    "started_at": now_iso(STORE_TIMESPEC),
                },
                ignore=True,
            )
        call = self.call(run_id, key)
        assert call is not None
        return call

    def finish_call(
        self, call_id: int, completions: list[CompletionFields], error: str | None = None
    ) -> None:
        """Store a call's answers (fields of `cudasmith.llm.Completion`); with none, it failed with `error`."""
        with self._write() as db:
            for index, completion in enumerate(completions):
                row: dict[str, SqlValue] = {
                    "call_id": call_id,
                    "idx": index,
                    "text": completion.get("text"),
                    "finish_reason": completion.get("finish_reason"),
                    "model": completion.get("model"),
                    "input_tokens": completion.get("input_tokens"),
                    "output_tokens": completion.get("output_tokens"),
                    "cost_usd": completion.get("cost_usd"),
                    "latency_s": completion.get("latency_s"),
                    "extra": _dumps(completion.get("extra") or {}),
                }
                _insert(db, "completions", row, ignore=True)
            db.execute(
                "UPDATE llm_calls SET status = ?, error = ?, finished_at = ? WHERE id = ?",
                ("done" if completions else "failed", error, now_iso(STORE_TIMESPEC), call_id),
            )

    def _completions(self, call_ids: list[int]) -> dict[int, list[CompletionRecord]]:
        found: dict[int, list[CompletionRecord]] = {i: [] for i in call_ids}
        if not call_ids:
            return found
        marks = ",".join("?" * len(call_ids))
        for row in self._rows(
            f"SELECT * FROM completions WHERE call_id IN ({marks}) ORDER BY idx", *call_ids
        ):
            found[row["call_id"]].append(CompletionRecord.from_row(row))
        return found

    def call(self, run_id: str, key: str) -> CallRecord | None:
        """The call stored under `key`, with its completions."""
        rows = self._rows("SELECT * FROM llm_calls WHERE run_id = ? AND key = ?", run_id, key)
        if not rows:
            return None
        return CallRecord.from_row(rows[0], self._completions([rows[0]["id"]])[rows[0]["id"]])

    def calls(self, run_id: str, purpose: str | None = None) -> list[CallRecord]:
        """A run's calls in the order they were made, with their completions."""
        rows = self._rows(
            "SELECT * FROM llm_calls WHERE run_id = ? AND (? IS NULL OR purpose = ?) ORDER BY id",
            run_id,
            purpose,
            purpose,
        )
        completions = self._completions([r["id"] for r in rows])
        return [CallRecord.from_row(r, completions[r["id"]]) for r in rows]

    # Candidates and verdicts.

    def add_candidate(self, run_id: str, key: str, origin: str, **fields: Any) -> CandidateRecord:
        """Store a candidate, or return the one stored under the same key (resume). `fields` are columns:
        round, island, operator, parents, completion_id, source, code_hash, path, parse, meta, skipped."""
        columns = {"run_id": run_id, "key": key, "origin": origin, "created_at": now_iso(STORE_TIMESPEC)}
        for name, value in fields.items():
            columns[name] = _dumps(value) if name in ("parents", "parse", "meta") else value
        with self._write() as db:
            _insert(db, "candidates", columns, ignore=True)
        rows = self._rows(f"{CANDIDATE_SELECT} WHERE c.run_id = ? AND c.key = ?", run_id, key)
        return CandidateRecord.from_row(rows[0])

    def update_candidate(self, candidate_id: int, **fields: Any) -> None:
        """Set columns of a candidate: path, meta, verifier, skipped, observed."""
        allowed = {"path", "meta", "verifier", "skipped", "observed"}
        if not set(fields) <= allowed:
            raise ValueError(f"not an updatable candidate column: {sorted(set(fields) - allowed)}")
        values = [_dumps(v) if k in ("meta", "verifier") else v for k, v in fields.items()]
        with self._write() as db:
            db.execute(
                f"UPDATE candidates SET {', '.join(f'{k} = ?' for k in fields)} WHERE id = ?",
                (*values, candidate_id),
            )

    def candidate(self, candidate_id: int) -> CandidateRecord:
        """One candidate with its verdict."""
        rows = self._rows(f"{CANDIDATE_SELECT} WHERE c.id = ?", candidate_id)
        if not rows:
            raise UsageError(f"no candidate {candidate_id} in {self.path}")
        return CandidateRecord.from_row(rows[0])

    def candidates(self, run_id: str) -> list[CandidateRecord]:
        """A run's candidates in the order they were made, each with its verdict (None until judged)."""
        rows = self._rows(f"{CANDIDATE_SELECT} WHERE c.run_id = ? ORDER BY c.id", run_id)
        return [CandidateRecord.from_row(r) for r in rows]

    def record_verdict(
        self,
        candidate_id: int,
        verdict: Verdict,
        key: CacheKey,
        code_hash: str | None,
        run_id: str | None,
        wall_s: float | None = None,
    ) -> int:
        """Store a verdict the judge just gave (the evaluation cache's entry) and its baseline times, and
        link it to the candidate; returns the verdict's id."""
        encoded = verdict.to_dict()
        columns = {
            "code_hash": code_hash,
            **asdict(key),
            "run_id": run_id,
            "status": encoded["status"],
            "speedup": encoded["speedup"],
            "verdict": json.dumps(encoded),
        }
        with self._write() as db:
            row = {
                **columns,
                "mac": verdict_mac(columns),
                "wall_s": wall_s,
                "created_at": now_iso(STORE_TIMESPEC),
            }
            verdict_id = _insert(db, "verdicts", row)
            for config in verdict.configs:
                for name, timed in config.baselines.items():
                    if timed.time_ms is None:
                        continue
                    row = {
                        "verdict_id": verdict_id,
                        "task_version": key.task_version,
                        "device_name": key.device_name,
                        "config_index": config.index,
                        "config": _dumps(config.config),
                        "name": name,
                        "time_ms": timed.time_ms,
                        "ci95_ms": _dumps(timed.ci95_ms),
                        "sol_pct": timed.sol_pct,
                        "measured_at": timed.measured_at,
                    }
                    _insert(db, "baselines", row)
            db.execute(
                "UPDATE candidates SET verdict_id = ?, verdict_cached = 0 WHERE id = ?",
                (verdict_id, candidate_id),
            )
        return verdict_id

    def cached_verdict(self, code_hash: str, key: CacheKey) -> VerdictRecord | None:
        """The latest verdict on this exact code under the same task, device, judge and options that the
        judge vouches for (rows failing their MAC are never reused)."""
        rows = self._rows(
            "SELECT * FROM verdicts WHERE code_hash = ? AND task_version = ? AND device_name = ? "
            "AND harness_version = ? AND judge_options = ? ORDER BY id DESC",
            code_hash,
            key.task_version,
            key.device_name,
            key.harness_version,
            key.judge_options,
        )
        intact = (record for record in map(VerdictRecord.from_row, rows) if not record.tampered)
        return next(intact, None)

    def use_cached_verdict(self, candidate_id: int, verdict_id: int) -> None:
        """Give a candidate a verdict from the cache (no judging happened for it)."""
        with self._write() as db:
            db.execute(
                "UPDATE candidates SET verdict_id = ?, verdict_cached = 1 WHERE id = ?",
                (verdict_id, candidate_id),
            )

    def verdicts(self, run_id: str) -> list[VerdictRecord]:
        """The verdicts the judge gave during a run (cache hits are not among them)."""
        return [
            VerdictRecord.from_row(r) for r in self._rows("SELECT * FROM verdicts WHERE run_id = ?", run_id)
        ]

    def baselines(self, task_version: str, device_name: str) -> list[BaselineTime]:
        """Every baseline time recorded for a task version on a device, oldest first."""
        rows = self._rows(
            "SELECT * FROM baselines WHERE task_version = ? AND device_name = ? ORDER BY id",
            task_version,
            device_name,
        )
        return [BaselineTime.from_row(r) for r in rows]

    # Events and chains.

    def add_event(self, run_id: str, key: str, kind: str, data: Mapping[str, object]) -> None:
        """Record something the search did (a round ended, islands migrated); once per key."""
        with self._write() as db:
            row = {
                "run_id": run_id,
                "key": key,
                "kind": kind,
                "data": _dumps(data),
                "created_at": now_iso(STORE_TIMESPEC),
            }
            _insert(db, "events", row, ignore=True)

    def events(self, run_id: str, kind: str | None = None) -> list[EventRecord]:
        """A run's events in order."""
        rows = self._rows(
            "SELECT * FROM events WHERE run_id = ? AND (? IS NULL OR kind = ?) ORDER BY id",
            run_id,
            kind,
            kind,
        )
        return [EventRecord.from_row(r) for r in rows]

    def chain(self, candidate_id: int) -> list[Turn]:
        """The multi-turn chain that led to a candidate, first turn first: each ancestor along the first
        parent, with the prompt its call sent, the answer, the code and the verdict."""
        turns: list[Turn] = []
        seen: set[int] = set()
        current: int | None = candidate_id
        while current is not None and current not in seen:
            seen.add(current)
            candidate = self.candidate(current)
            messages: list[dict[str, str]] = []
            response = None
            if candidate.completion_id is not None:
                row = self._rows(
                    "SELECT c.text, l.request FROM completions c JOIN llm_calls l ON l.id = c.call_id WHERE c.id = ?",
                    candidate.completion_id,
                )[0]
                response, messages = row["text"], json.loads(row["request"]).get("messages", [])
            turns.append(
                Turn(
                    candidate.id,
                    messages,
                    response,
                    candidate.source,
                    candidate.verdict,
                    candidate.status,
                    candidate.operator,
                    candidate.parents,
                )
            )
            current = candidate.parents[0] if candidate.parents else None
        return turns[::-1]

    def close(self) -> None:
        """Close the file (every write is already committed)."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
