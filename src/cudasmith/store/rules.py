"""Which rule of the judge a verdict says was broken, read from its reason.

The harness states a broken rule in the verdict's one-line reason (`rejected` for a rule, `incorrect`
for wrong values). Benches count rejections per rule, so each rule has a short id here and the phrases
the harness uses for it; a verdict dict carrying its own `rule` field wins over the reading.
"""

from __future__ import annotations

import re
from typing import Any

# (rule id, what it forbids, pattern over the reason). The first match wins, so the more specific
# phrases come first: the static screen's reasons name the construct and why it is refused.
RULES: tuple[tuple[str, str, str], ...] = (
    (
        "pytorch-compute",
        "PyTorch doing the work inside forward",
        r"PyTorch operator \S+ called inside forward|PyTorch compute (compiled|replayed)"
        r"|a kernel that is not the solution's own ran",
    ),
    ("input-mutation", "forward modifying its inputs", r"input \d+ was modified"),
    (
        "side-stream",
        "output not ready on the caller's stream when forward returns",
        r"unsynchronised side stream",
    ),
    (
        "caching",
        "results cached, or work done only when checked",
        r"output of timed call \d+ is wrong",
    ),
    (
        "impossible-time",
        "a time under the roofline floor",
        r"under the roofline floor|no work on the device at all",
    ),
    (
        "forged-results",
        "answers forged on the harness's channel",
        r"forged results|garbage on the result channel|request never made|supervisor was killed",
    ),
    (
        "tampering",
        "patching the judge, the comparison or the timers",
        r"the solution replaced |patching a library the judge uses|patching the interpreter",
    ),
    (
        "introspection",
        "reading the judge's frames or live objects",
        r"reading the harness's frames|scavenging live objects|reaching into the harness|introspect",
    ),
    (
        "processes-threads",
        "work on threads or processes the judge does not see",
        r"thread\(s\) running|starting (threads|processes)|signalling processes|leaving the process group",
    ),
    (
        "early-exit",
        "ending the worker before it answers",
        r"ended the worker|called sys\.exit|ending the worker",
    ),
    (
        "file-descriptors",
        "writing to or closing the harness's file descriptors",
        r"file descriptors",
    ),
    ("networking", "reaching the network", r"networking"),
    ("sandbox-write", "writing outside its scratch folder", r"sandbox-write"),
    ("sandbox-read", "reading files outside what it needs", r"sandbox-read"),
    ("signals", "handling signals", r"handling signals"),
)
RULE_TITLES = {rule: title for rule, title, _ in RULES}
# A rejection whose reason names none of the rules above (a newer harness's wording, say).
OTHER_RULE = "other"
_COMPILED = tuple((rule, re.compile(pattern)) for rule, _, pattern in RULES)


def rule_broken(verdict: dict[str, Any]) -> str | None:
    """The id of the rule a rejected verdict broke (OTHER_RULE when its reason names none); None
    for verdicts that are not rejections."""
    if verdict.get("status") != "rejected":
        return None
    if verdict.get("rule"):
        return str(verdict["rule"])
    reason = str(verdict.get("reason") or "")
    return next((rule for rule, pattern in _COMPILED if pattern.search(reason)), OTHER_RULE)


def caught_by(verdict: dict[str, Any]) -> str | None:
    """'static screen' when the source was refused before running, 'run time' for other rejections."""
    if verdict.get("status") != "rejected":
        return None
    return "static screen" if str(verdict.get("reason", "")).startswith("static screen:") else "run time"
