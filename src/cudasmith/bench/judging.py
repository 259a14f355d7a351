"""The judge as a bench sees it: a session over one task, and the key its verdicts are cached under.

`Judge` has the shape of the coming `cudasmith.Judge` session (one task, many candidates): until that
lands each `judge()` is one `evaluate()`. `cache_key` identifies the judge by a hash of its own code
(harness and runtime) and the options that change verdicts, so a changed judge gets fresh verdicts.
Both move to their homes (cudasmith.harness.session, the optimize branch's cudasmith.harness.version)
when those land; nothing else in the bench changes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from functools import cache
from pathlib import Path
from types import TracebackType

from cudasmith.harness.runner import EvalOptions, evaluate
from cudasmith.harness.verdict import Verdict
from cudasmith.store import CacheKey
from cudasmith.tasks.problem import Problem

# Options that do not change a verdict: the secret seed (any seed's verdict is the same judge's), the
# device (a part of the key on its own), and whether cached baseline times may seed timing.
NOT_VERDICT_OPTIONS = ("seed", "device", "baseline_cache")


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


@cache
def harness_version() -> str:
    """A hash of the judge's source files (harness, runtime, timing, device)."""
    from cudasmith import __version__

    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256(__version__.encode())
    for folder in ("harness", "runtime", "timing", "device"):
        for path in sorted(root.joinpath(folder).glob("*.py")):
            digest.update(f"{folder}/{path.name}".encode())
            digest.update(path.read_bytes())
    return f"{__version__}+{digest.hexdigest()[:12]}"


def judge_options_digest(options: EvalOptions) -> str:
    """A hash of the options that change verdicts (seeds per config, timing, limits, baselines…)."""
    relevant = {k: v for k, v in asdict(options).items() if k not in NOT_VERDICT_OPTIONS}
    return hashlib.sha256(json.dumps(relevant, sort_keys=True, default=str).encode()).hexdigest()[:16]


def cache_key(problem: Problem, options: EvalOptions, device_name: str) -> CacheKey:
    """The key of this judge's verdicts on `problem` in the store's evaluation cache (code hash aside)."""
    return CacheKey(problem.source_hash, device_name, harness_version(), judge_options_digest(options))
