"""Verdicts stored before verdicts named their rule: each gets its rule once, read from its reason with the
phrases the judge of that time used, when the store is brought up to date (schema version 3).

Nothing else reads a rule out of a reason. A rejection whose reason matches none of these phrases gets
Rule.OTHER; a failure gets its status's own kind. Rows that fail their MAC are left as they are (they are
shown as tampered, and a new MAC would vouch for them), and rows whose verdict names a rule already are not
touched.
"""

from __future__ import annotations

import json
import re
import sqlite3

from cudasmith.harness.wire.status import Rule, Status
from cudasmith.jsontypes import JsonObject
from cudasmith.store.integrity import VERDICT_COLUMNS, verdict_intact, verdict_mac

# (rule, pattern over an older judge's reason). The first match wins, so the more specific phrases come
# first: the static screen's reasons name the construct and why it is refused.
PHRASES: tuple[tuple[Rule, re.Pattern[str]], ...] = tuple(
    (rule, re.compile(pattern))
    for rule, pattern in (
        (
            Rule.PYTORCH_COMPUTE,
            r"PyTorch operator \S+ called inside forward|PyTorch compute (compiled|replayed)"
            r"|a kernel that is not the solution's own ran",
        ),
        (Rule.INPUT_MUTATION, r"input \d+ was modified"),
        (Rule.SIDE_STREAM, r"unsynchronised side stream"),
        (Rule.CACHING, r"output of timed call \d+ is wrong"),
        (Rule.IMPOSSIBLE_TIME, r"under the roofline floor|no work on the device at all"),
        (
            Rule.FORGED_RESULTS,
            r"forged results|garbage on the result channel|request never made|supervisor was killed",
        ),
        (
            Rule.TAMPERING,
            r"the solution replaced |patching a library the judge uses|patching the interpreter",
        ),
        (
            Rule.INTROSPECTION,
            r"reading the harness's frames|scavenging live objects|reaching into the harness|introspect",
        ),
        (
            Rule.PROCESSES_THREADS,
            r"thread\(s\) running|starting (threads|processes)|signalling processes|leaving the process group",
        ),
        (Rule.EARLY_EXIT, r"ended the worker|called sys\.exit|ending the worker"),
        (Rule.FILE_DESCRIPTORS, r"file descriptors"),
        (Rule.NETWORKING, r"networking"),
        (Rule.SANDBOX_WRITE, r"sandbox-write"),
        (Rule.SANDBOX_READ, r"sandbox-read"),
        (Rule.SIGNALS, r"handling signals"),
    )
)


def rule_of_reason(status: object, reason: object) -> Rule | None:
    """The rule an older judge's verdict (or config) broke, read from its reason; None when correct."""
    try:
        known = Status(status)
    except ValueError:
        return None
    if known is not Status.REJECTED:
        return Rule.of_status(known)
    text = str(reason or "")
    return next((rule for rule, pattern in PHRASES if pattern.search(text)), Rule.OTHER)


def _named(entry: JsonObject) -> None:
    rule = rule_of_reason(entry.get("status"), entry.get("reason"))
    entry["rule"] = None if rule is None else rule.value


def name_rules(db: sqlite3.Connection) -> None:
    """Give every intact stored verdict that names no rule the rule of its reason (and each of its configs
    theirs), with a new MAC over the changed row. Runs inside the migration's transaction."""
    selected = ", ".join(VERDICT_COLUMNS)
    for row in db.execute(f"SELECT id, mac, {selected} FROM verdicts").fetchall():
        columns = {name: row[name] for name in VERDICT_COLUMNS}
        verdict = json.loads(columns["verdict"])
        if not isinstance(verdict, dict) or "rule" in verdict or not verdict_intact(columns, row["mac"]):
            continue
        _named(verdict)
        for config in verdict.get("configs") or []:
            if isinstance(config, dict) and "rule" not in config:
                _named(config)
        columns["verdict"] = json.dumps(verdict)
        db.execute(
            "UPDATE verdicts SET verdict = ?, mac = ? WHERE id = ?",
            (columns["verdict"], verdict_mac(columns), row["id"]),
        )
