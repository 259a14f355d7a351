"""The judge's identity for caches of verdicts: its own code, and the options that change what it says."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from functools import cache
from pathlib import Path

from cudasmith.harness.options import EvalOptions

# Options that do not change a verdict: the secret seed (any seed's verdict is a verdict of the same
# judge), the device (part of a cache key on its own), and how many workers a session starts ahead.
NOT_VERDICT_OPTIONS = ("seed", "device", "warm_workers", "require_isolation")
# The packages whose code decides verdicts: the judge, its timing protocol, device facts (speed of light,
# launch cost), the kernel runtime, and the making and perturbing of inputs.
JUDGE_PACKAGES = ("harness", "timing", "device", "runtime", "tasks")


@cache
def harness_version() -> str:
    """A hash of the judge's source files (JUDGE_PACKAGES): a changed judge gets fresh verdicts."""
    from cudasmith import __version__

    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256(__version__.encode())
    for path in sorted(p for package in JUDGE_PACKAGES for p in root.joinpath(package).glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return f"{__version__}+{digest.hexdigest()[:12]}"


def judge_options_digest(options: EvalOptions) -> str:
    """A hash of the options that change verdicts (seeds per config, timing, limits, baselines…)."""
    relevant = {k: v for k, v in asdict(options).items() if k not in NOT_VERDICT_OPTIONS}
    return hashlib.sha256(json.dumps(relevant, sort_keys=True, default=str).encode()).hexdigest()[:16]
