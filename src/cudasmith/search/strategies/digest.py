"""Other candidates, told briefly for a prompt: the failures of the last round (deduplicated and trimmed
to a budget) and the solutions a new one may learn from."""

from __future__ import annotations

import re

from cudasmith.search.feedback import trim_compiler_output, trim_traceback
from cudasmith.search.strategies.base import SearchCandidate

# Lines of compiler output or traceback shown per failure (the parent's own feedback shows more).
FAILURE_LOG_LINES = 6
NUMBER = re.compile(r"\d+(\.\d+)?(e[-+]?\d+)?")


def summary_line(candidate: SearchCandidate) -> str:
    """'candidate 7: correct, 1.80x eager PyTorch, 34 % of speed of light' and the like."""
    verdict = candidate.verdict
    if verdict is None:
        return f"candidate {candidate.id}: not judged ({candidate.skipped})"
    text = f"candidate {candidate.id}: {verdict.status}"
    if candidate.speedup:
        text += f", {candidate.speedup:.2f}x {verdict.baseline}"
    if (sol := candidate.sol_pct()) is not None:
        text += f", {sol:.0f} % of speed of light"
    return text if candidate.correct else f"{text}: {verdict.reason}"


def _failure_text(candidate: SearchCandidate) -> str:
    assert candidate.verdict is not None
    verdict = candidate.verdict
    text = f"- {verdict.status}: {verdict.reason}"
    log = verdict.artifacts.get("traceback", "")
    if log and verdict.status in ("compile_error", "runtime_error"):
        trim = trim_compiler_output if verdict.status == "compile_error" else trim_traceback
        lines = trim(log).splitlines()[:FAILURE_LOG_LINES]
        text += "\n  ```\n" + "\n".join(f"  {line}" for line in lines) + "\n  ```"
    return text


def failures_block(candidates: list[SearchCandidate], shown: int, chars: int) -> str:
    """The distinct failures among `candidates`, most repairable first, at most `shown` and `chars`.

    Two failures are the same when their status and reason match with numbers ignored (a mismatch at
    another index is the same bug)."""
    failed = [c for c in candidates if c.verdict is not None and not c.correct]
    seen: set[tuple[str, str]] = set()
    parts: list[str] = []
    used = 0
    for candidate in failed:
        assert candidate.verdict is not None
        identity = (candidate.verdict.status, NUMBER.sub("#", candidate.verdict.reason))
        if identity in seen:
            continue
        seen.add(identity)
        text = _failure_text(candidate)
        if len(parts) >= shown or used + len(text) > chars:
            break
        parts.append(text)
        used += len(text) + 1
    return "\n".join(parts)


def inspirations_block(candidates: list[SearchCandidate], chars: int) -> str:
    """Each candidate's summary and code, as long as they fit in `chars`."""
    parts: list[str] = []
    used = 0
    for candidate in candidates:
        text = f"{summary_line(candidate)}\n\n```python\n{(candidate.source or '').strip()}\n```"
        if used + len(text) > chars:
            break
        parts.append(text)
        used += len(text)
    return "\n\n".join(parts)
