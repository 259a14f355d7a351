"""An LLM verifier: a model reads a candidate before the judge does and says whether it will pass.

Its opinion only orders the judge's queue (a "fail" waits behind the others); nothing is discarded on
its word, because verifiers are often wrong about correct kernels (in robust-kbench's results, 3 of 12
kernels correct on hardware got a unanimous "wrong"). How often it was right is measured against the
judge: flagging a failure is a positive, so precision is the share of its "fail"s the judge also
failed, and recall the share of the judge's failures it flagged (store.summary.VerifierAgreement).
"""

from __future__ import annotations

import json
import re

from cudasmith.search.hardware import Hardware
from cudasmith.search.prompts import Prompt, PromptBuilder
from cudasmith.store.shapes import Opinion
from cudasmith.tasks.problem import Problem

# Queue priorities: judged first, then those not (yet) reviewed, then those the verifier failed.
PRIORITY = {"pass": 0, None: 1, "unclear": 1, "fail": 2}
OPINION = re.compile(r"\{[^{}]*\"verdict\"[^{}]*\}", re.DOTALL)


def verifier_prompt(
    builder: PromptBuilder, problem: Problem, device: str, hardware: Hardware, source: str
) -> Prompt:
    """The review request for one candidate."""
    values = {**builder.task_values(problem, device, hardware), "candidate_source": source.strip("\n")}
    return Prompt(builder.render("verifier_system", values), builder.render("verifier", values) + "\n")


def parse_opinion(text: str) -> Opinion:
    """{"verdict": "pass" | "fail" | "unclear", "reason": …} from the verifier's answer."""
    for match in reversed(OPINION.findall(text)):
        try:
            data = json.loads(match)
        except json.JSONDecodeError:
            continue
        verdict = str(data.get("verdict", "")).strip().lower()
        if verdict in ("pass", "fail"):
            return {"verdict": verdict, "reason": str(data.get("reason", ""))[:300]}
    words = re.findall(r"\b(pass|fail)\b", text.lower())
    if len(set(words)) == 1:
        return {"verdict": words[0], "reason": "(no JSON in the answer)"}
    return {"verdict": "unclear", "reason": "the answer says neither pass nor fail"}
