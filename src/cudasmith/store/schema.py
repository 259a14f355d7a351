"""The run store's tables, and the migrations that bring an older file up to date.

The schema version is SQLite's `PRAGMA user_version`: 0 for a new file, `len(MIGRATIONS)` once current.
Migration k (1-based) turns version k-1 into version k: SQL, or a function of the connection for what SQL
cannot do. `migrate` applies them as a store opens, each in one transaction, so a file is always at some
version, never between two. Never edit a migration that has shipped: append one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from cudasmith.errors import UsageError
from cudasmith.store.legacy import name_rules

# Version 1: runs, LLM calls and their completions, candidates with lineage, verdicts (the evaluation
# cache), baseline times taken from verdicts, and events (round boundaries, migrations, stops).
_V1 = """
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    task TEXT NOT NULL,
    task_version TEXT NOT NULL,
    problem_path TEXT,
    strategy TEXT,
    models TEXT NOT NULL DEFAULT '[]',
    options TEXT NOT NULL DEFAULT '{}',
    device TEXT NOT NULL,
    device_name TEXT NOT NULL,
    versions TEXT NOT NULL DEFAULT '{}',
    harness_version TEXT NOT NULL,
    secret_seed INTEGER,
    directory TEXT,
    status TEXT NOT NULL DEFAULT 'running',
    stop_reason TEXT,
    summary TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE llm_calls (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    key TEXT NOT NULL,
    purpose TEXT NOT NULL,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    meta TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL DEFAULT 'pending',
    error TEXT,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    UNIQUE (run_id, key)
);
CREATE TABLE completions (
    id INTEGER PRIMARY KEY,
    call_id INTEGER NOT NULL REFERENCES llm_calls(id),
    idx INTEGER NOT NULL,
    text TEXT NOT NULL,
    finish_reason TEXT,
    model TEXT,
    input_tokens INTEGER,
    output_tokens INTEGER,
    cost_usd REAL,
    latency_s REAL,
    extra TEXT NOT NULL DEFAULT '{}',
    UNIQUE (call_id, idx)
);
CREATE TABLE verdicts (
    id INTEGER PRIMARY KEY,
    code_hash TEXT,
    task_version TEXT NOT NULL,
    device_name TEXT NOT NULL,
    harness_version TEXT NOT NULL,
    judge_options TEXT NOT NULL,
    run_id TEXT REFERENCES runs(id),
    status TEXT NOT NULL,
    speedup REAL,
    verdict TEXT NOT NULL,
    wall_s REAL,
    created_at TEXT NOT NULL
);
CREATE INDEX verdict_cache ON verdicts (code_hash, task_version, device_name, harness_version, judge_options);
CREATE TABLE candidates (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    key TEXT NOT NULL,
    round INTEGER NOT NULL DEFAULT 0,
    island INTEGER,
    origin TEXT NOT NULL,
    operator TEXT,
    parents TEXT NOT NULL DEFAULT '[]',
    completion_id INTEGER REFERENCES completions(id),
    source TEXT,
    code_hash TEXT,
    path TEXT,
    parse TEXT NOT NULL DEFAULT '{}',
    meta TEXT NOT NULL DEFAULT '{}',
    verifier TEXT,
    skipped TEXT,
    verdict_id INTEGER REFERENCES verdicts(id),
    verdict_cached INTEGER NOT NULL DEFAULT 0,
    observed INTEGER,
    created_at TEXT NOT NULL,
    UNIQUE (run_id, key)
);
CREATE INDEX candidates_of_run ON candidates (run_id, id);
CREATE TABLE baselines (
    id INTEGER PRIMARY KEY,
    verdict_id INTEGER NOT NULL REFERENCES verdicts(id),
    task_version TEXT NOT NULL,
    device_name TEXT NOT NULL,
    config_index INTEGER NOT NULL,
    config TEXT NOT NULL,
    name TEXT NOT NULL,
    time_ms REAL,
    ci95_ms TEXT,
    sol_pct REAL,
    measured_at TEXT
);
CREATE INDEX baselines_of_task ON baselines (task_version, device_name, config_index, name);
CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    key TEXT NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    UNIQUE (run_id, key)
);
"""

# Version 2: verdict rows carry the judge's MAC (store/integrity.py), and run seeds are kept masked.
_V2 = """
ALTER TABLE verdicts ADD COLUMN mac TEXT;
ALTER TABLE runs ADD COLUMN seed_masked INTEGER NOT NULL DEFAULT 0;
"""

# Version 3: every verdict names the rule it broke (its JSON's "rule"); those stored before get theirs from
# their reason, once (legacy.py).
MIGRATIONS: tuple[str | Callable[[sqlite3.Connection], None], ...] = (_V1, _V2, name_rules)
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(db: sqlite3.Connection, path: Path) -> None:
    """Bring the store at `path` (open as `db`, in autocommit mode) up to SCHEMA_VERSION, one migration per
    transaction; a file made by a newer cudasmith is refused."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise UsageError(
            f"{path}: made by a newer cudasmith (schema {version}, this one knows {SCHEMA_VERSION})"
        )
    for number in range(version, SCHEMA_VERSION):
        migration = MIGRATIONS[number]
        if isinstance(migration, str):
            # executescript commits first, so BEGIN and the version bump are inside the script.
            db.executescript(f"BEGIN IMMEDIATE;\n{migration}\nPRAGMA user_version = {number + 1};\nCOMMIT;")
            continue
        db.execute("BEGIN IMMEDIATE")
        try:
            migration(db)
            db.execute(f"PRAGMA user_version = {number + 1}")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
