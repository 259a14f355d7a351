"""The judge as a search sees it: a session over one task that turns a solution file into a verdict,
and the key under which its verdicts are cached.

`Judge` has the shape of `cudasmith.Judge` (judge sessions): until sessions land it is today's one-shot
`evaluate` per candidate; then this module imports theirs instead, and nothing else changes.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import Protocol

from cudasmith.harness.runner import EvalOptions, evaluate
from cudasmith.harness.verdict import Verdict
from cudasmith.harness.version import harness_version, judge_options_digest
from cudasmith.store import CacheKey
from cudasmith.tasks.problem import Problem


class JudgeSession(Protocol):
    """What the search needs of a judge: one solution file in, its verdict out (slow: seconds)."""

    def judge(self, path: Path) -> Verdict: ...


# Makes a session for a problem and options; tests pass a scripted judge instead.
JudgeFactory = Callable[[Problem, EvalOptions], AbstractContextManager[JudgeSession]]


class Judge:
    """One task, many candidates: `with Judge(problem=p, options=o) as judge: judge.judge(path)`."""

    def __init__(self, problem: Problem, options: EvalOptions) -> None:
        self.problem = problem
        self.options = options

    def judge(self, path: Path) -> Verdict:
        """The verdict on one solution file."""
        return evaluate(path, self.problem, self.options)

    def __enter__(self) -> Judge:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None


def cache_key(problem: Problem, options: EvalOptions, device_name: str) -> CacheKey:
    """The key of this judge's verdicts on `problem` in the store's evaluation cache (code hash aside)."""
    return CacheKey(problem.source_hash, device_name, harness_version(), judge_options_digest(options))
