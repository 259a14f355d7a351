"""The judge as a search sees it: a session over one task that turns a solution file into a verdict,
and the key under which its verdicts are cached.

`Judge` is `cudasmith.Judge`, the judge session: one reference worker and warm candidate workers serve
every candidate of a search on one task. Tests pass a scripted judge of the same shape instead.
"""

from __future__ import annotations

from cudasmith.exec.jobs import ProblemRef
from cudasmith.exec.lane import JudgeFactory, JudgeSession
from cudasmith.harness.options import EvalOptions
from cudasmith.harness.session import Judge
from cudasmith.harness.version import harness_version, judge_options_digest
from cudasmith.store import CacheKey
from cudasmith.tasks.problem import Problem

__all__ = ["Judge", "JudgeFactory", "JudgeSession", "cache_key"]


def cache_key(
    problem: Problem | ProblemRef, options: EvalOptions, device_name: str, judge_version: str | None = None
) -> CacheKey:
    """The key of a judge's verdicts on `problem` (loaded, or as it travels) in the store's evaluation cache
    (code hash aside): this judge's, or that of `judge_version` (a server's)."""
    judge = judge_version or harness_version()
    return CacheKey(problem.source_hash, device_name, judge, judge_options_digest(options))
