"""Which rule of the judge a verdict says was broken: its `rule`, named where the verdict was born.

Benches and reports count rejections per rule (harness/wire/status.py's Rule, which has each rule's title).
A verdict stored before verdicts named their rule got its rule once, when the store was brought up to date
(legacy.py); a verdict read from a file of an older judge that names none counts under OTHER_RULE.
"""

from __future__ import annotations

from cudasmith.harness.verdict import Verdict
from cudasmith.harness.wire.status import Rule, Status

RULE_TITLES = {rule.value: rule.headline for rule in Rule if rule.is_rejection}
OTHER_RULE = Rule.OTHER.value


def rule_broken(verdict: Verdict | None) -> str | None:
    """The id of the rule a rejected verdict broke (OTHER_RULE when it names none); None for verdicts that
    are not rejections (and for a stored verdict that fails its MAC: None here)."""
    if verdict is None or verdict.status is not Status.REJECTED:
        return None
    return str(verdict.rule or OTHER_RULE)


def caught_by(verdict: Verdict) -> str | None:
    """'static screen' when the source was refused before running, 'run time' for other rejections."""
    if verdict.status is not Status.REJECTED:
        return None
    return "static screen" if verdict.reason.startswith("static screen:") else "run time"
