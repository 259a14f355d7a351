"""Every rejection names its rule where it is made, and a verdict keeps it to the report: bench and report
count rules by the verdict's `rule`, however its reason is worded."""

from __future__ import annotations

import ast

import pytest

from cudasmith.harness.assemble import finish
from cudasmith.harness.verdict import ConfigResult, Failure, Verdict
from cudasmith.harness.wire.status import Rule, Status

from conftest import ROOT

SRC = ROOT / "src" / "cudasmith"


def _is_rejected(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "REJECTED" and isinstance(node.value, ast.Name)


def _names_rule(node: ast.AST) -> bool:
    """A Rule member, or a value whose name says it is a rule (`rule`, `failure.rule`, `reply.verdict_rule`)."""
    if isinstance(node, ast.Attribute):
        return (isinstance(node.value, ast.Name) and node.value.id == "Rule") or "rule" in node.attr
    if isinstance(node, ast.Starred):
        return isinstance(node.value, ast.Name) and node.value.id.isupper()  # a (rule, why) table entry
    return isinstance(node, ast.Name) and "rule" in node.id


def test_every_rejection_in_the_judge_names_its_rule() -> None:
    unnamed = []
    for path in sorted((SRC / "harness").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                arguments = [*node.args, *(keyword.value for keyword in node.keywords)]
                if any(_is_rejected(a) for a in arguments) and not any(_names_rule(a) for a in arguments):
                    unnamed.append(f"{path.relative_to(SRC)}:{node.lineno}")
            elif isinstance(node, ast.Assign) and any(_is_rejected(n) for n in ast.walk(node.value)):
                # `x.status = Status.REJECTED` must set `x.rule` in the same statement.
                targets = {
                    n.attr
                    for target in node.targets
                    for n in ast.walk(target)
                    if isinstance(n, ast.Attribute)
                }
                if "status" in targets and "rule" not in targets:
                    unnamed.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert not unnamed, "a rejection that names no rule: " + ", ".join(unnamed)


def test_a_failing_config_gives_the_verdict_its_rule() -> None:
    verdict = Verdict(Status.CORRECT, "", "t", "s.py", "cpu")
    results = [ConfigResult(0, {}, False), ConfigResult(1, {}, False)]
    results[0].seeds_checked = 1
    results[1].fail(Status.REJECTED, "config 1: anything at all", Rule.CACHING)
    finish(verdict, results)
    assert (verdict.status, verdict.rule) == (Status.REJECTED, Rule.CACHING)
    back = Verdict.from_dict(verdict.to_dict())
    assert back.rule is Rule.CACHING and back.configs[1].rule is Rule.CACHING


@pytest.mark.parametrize(
    ("status", "rule"),
    [(Status.INCORRECT, Rule.WRONG_ANSWER), (Status.TIMEOUT, Rule.TIME_LIMIT), (Status.REJECTED, Rule.OTHER)],
)
def test_a_failure_names_its_kind_where_no_rule_is_named(status: Status, rule: Rule) -> None:
    verdict = Verdict(Status.CORRECT, "", "t", "s.py", "cpu")
    finish(verdict, [], Failure(status, "loading: it failed", Rule.of_status(status)))
    assert verdict.rule is rule
    assert Verdict.from_dict({**verdict.to_dict(), "rule": "no such rule"}).rule is rule
    assert Verdict.from_dict(Verdict(Status.CORRECT, "", "t", "s.py", "cpu").to_dict()).rule is None
