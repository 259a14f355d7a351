"""`cudasmith eval --explain-defences`: each defence, the layer it lives in, and what it cannot stop."""

from __future__ import annotations

from cudasmith.harness.wire.status import Rule
from cudasmith.harness.witnesses.defences import DEFENCES, LAYERS, rules_covered

from conftest import run_cli


def test_the_defences_are_printed_layer_by_layer_without_a_solution() -> None:
    done = run_cli("eval", "--explain-defences")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    for layer in LAYERS:
        assert layer in text
    assert "the parent's clock" in text and "cannot stop" in text and "native code" in text


def test_every_rule_of_the_judge_is_named_by_a_defence_that_says_what_it_cannot_stop() -> None:
    judged = {rule for rule in Rule if rule.is_rejection and rule is not Rule.OTHER}
    assert judged <= rules_covered(), judged - rules_covered()
    assert all(defence.layer in LAYERS and defence.cannot_stop for defence in DEFENCES)
