"""Which rule of the judge a verdict says was broken: its `rule`, named where the verdict was born.

Benches and reports count rejections per rule (harness/wire/status.py's Rule, which has each rule's title).
A verdict stored before verdicts named their rule got its rule once, when the store was brought up to date
(legacy.py); a verdict read from a file of an older judge that names none counts under OTHER_RULE.
"""

from __future__ import annotations

from typing import Any

from cudasmith.harness.wire.status import Rule

RULE_TITLES = {rule.value: rule.title for rule in Rule if rule.is_rejection}
OTHER_RULE = Rule.OTHER.value


def rule_broken(verdict: dict[str, Any]) -> str | None:
    """The id of the rule a rejected verdict broke (OTHER_RULE when it names none); None for verdicts that
    are not rejections."""
    if verdict.get("status") != "rejected":
        return None
    return str(verdict.get("rule") or OTHER_RULE)


def caught_by(verdict: dict[str, Any]) -> str | None:
    """'static screen' when the source was refused before running, 'run time' for other rejections."""
    if verdict.get("status") != "rejected":
        return None
    return "static screen" if str(verdict.get("reason", "")).startswith("static screen:") else "run time"
