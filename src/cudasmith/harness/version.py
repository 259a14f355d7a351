"""The judge's identity for caches of verdicts: its own code, and the options that change what it says."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from functools import cache
from pathlib import Path

from cudasmith.harness.options import EvalOptions

# Options that do not change a verdict: the secret seed (any seed's verdict is a verdict of the same
# judge), the device (part of a cache key on its own), how many workers a session starts ahead, how many
# candidates it judges at once, and whether isolation was required (a verdict says whether it had it).
NOT_VERDICT_OPTIONS = ("seed", "device", "warm_workers", "in_flight", "require_isolation")
# The packages whose code decides verdicts: the judge, its timing protocol, device facts (speed of light,
# launch cost), the kernel runtime, and the making and perturbing of inputs.
JUDGE_PACKAGES = ("harness", "timing", "device", "runtime", "tasks")
# Their code is their modules and those of their subpackages; the task suite's problem files are tasks, each
# with a version of its own in a verdict's cache key, not judge code.
NOT_JUDGE_CODE = ("tasks/suite",)


@cache
def harness_version() -> str:
    """A hash of the judge's source files (JUDGE_PACKAGES): a changed judge gets fresh verdicts."""
    from cudasmith import __version__

    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256(__version__.encode())
    for path in sorted(p for package in JUDGE_PACKAGES for p in root.joinpath(package).rglob("*.py")):
        name = path.relative_to(root).as_posix()
        if name.startswith(NOT_JUDGE_CODE):
            continue
        digest.update(name.encode())
        digest.update(path.read_bytes())
    return f"{__version__}+{digest.hexdigest()[:12]}"


def judge_options_digest(options: EvalOptions) -> str:
    """A hash of the options that change verdicts (seeds per config, timing, limits, baselines…)."""
    relevant = {k: v for k, v in asdict(options).items() if k not in NOT_VERDICT_OPTIONS}
    return hashlib.sha256(json.dumps(relevant, sort_keys=True, default=str).encode()).hexdigest()[:16]
