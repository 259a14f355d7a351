"""The store's rows that the judge vouches for: each verdict row carries a MAC under the judge's key
(runtime/seal.py), and each run's secret seed is kept masked by it.

A row that fails its check was written by something other than the judge (a candidate that reached the
file, a hand with the sqlite3 command): it is never reused from the evaluation cache, its content is never
decoded, and everything that reads verdicts (bench's summary, `report`) counts it under status "tampered".
"""

from __future__ import annotations

import json

from cudasmith.harness.verdict import Verdict
from cudasmith.runtime import seal
from cudasmith.store.shapes import SqlValue

# The verdict row's columns under its MAC (all but its id, wall time and creation time).
VERDICT_COLUMNS = (
    "code_hash", "task_version", "device_name", "harness_version", "judge_options", "run_id", "status",
    "speedup", "verdict",
)  # fmt: skip
VERDICT_PURPOSE = "verdict-row"
SEED_PURPOSE = "run-seed"
TAMPERED = "tampered"
TAMPERED_REASON = "the stored verdict fails its MAC: it was changed outside the judge, and is not trusted"
# The prefix of a verdict row's columns when read beside a candidate.
JOINED = "v_"
CANDIDATE_SELECT = (
    "SELECT c.*, v.mac AS v_mac, "
    + ", ".join(f"v.{column} AS {JOINED}{column}" for column in VERDICT_COLUMNS)
    + " FROM candidates c LEFT JOIN verdicts v ON v.id = c.verdict_id"
)


def verdict_mac(columns: dict[str, SqlValue]) -> str:
    """The MAC of a verdict row's columns (VERDICT_COLUMNS)."""
    return seal.mac(VERDICT_PURPOSE, json.dumps([columns.get(name) for name in VERDICT_COLUMNS]))


def verdict_intact(columns: dict[str, SqlValue], mac: SqlValue) -> bool:
    """Whether a verdict row is as the judge wrote it."""
    text = json.dumps([columns.get(name) for name in VERDICT_COLUMNS])
    return isinstance(mac, str) and seal.verify(mac, VERDICT_PURPOSE, text)


def stored_verdict(columns: dict[str, SqlValue], mac: SqlValue) -> Verdict | None:
    """A verdict row's verdict; None for a row that fails its MAC (nothing of its content is read)."""
    if not verdict_intact(columns, mac):
        return None
    return Verdict.from_dict(json.loads(str(columns["verdict"])))


def split_joined(data: dict[str, SqlValue]) -> tuple[dict[str, SqlValue] | None, SqlValue]:
    """Take a candidate row's joined verdict columns out of it: (columns, mac), or (None, None) unjudged."""
    columns = {name: data.pop(f"{JOINED}{name}", None) for name in VERDICT_COLUMNS}
    mac = data.pop(f"{JOINED}mac", None)
    return (columns, mac) if columns["verdict"] is not None else (None, None)


def masked_seed(seed: int | None, run_id: str) -> int | None:
    """The seed as the store keeps it (masked under the judge's key; unmasked by the same call)."""
    return None if seed is None else seal.mask(seed, f"{SEED_PURPOSE}:{run_id}")
