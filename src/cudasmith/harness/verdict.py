"""The verdict: what the judge says of one candidate, as data and as the JSON of DESIGN.md."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from cudasmith.timing.protocol import RAW_KEYS

STATUSES = ("correct", "incorrect", "rejected", "compile_error", "runtime_error", "timeout")
# When configs disagree, the verdict takes the status that comes first here.
PRECEDENCE = ("timeout", "compile_error", "rejected", "runtime_error", "incorrect", "correct")


@dataclass
class ConfigResult:
    """One config's outcome: correctness over its seeds, then (when correct) times against the baseline."""

    index: int
    config: dict[str, Any] | str
    hidden: bool
    status: str = "correct"
    reason: str = ""
    seeds_checked: int = 0
    rel_err: float | None = None
    max_abs_err: float | None = None
    time_ms: float | None = None
    time_ci95_ms: list[float] | None = None
    baseline_ms: float | None = None
    speedup: float | None = None
    mismatch: dict[str, Any] | None = None
    timing: dict[str, Any] | None = None
    baseline_timing: dict[str, Any] | None = None
    # Work, speed of light and floor of this config (roofline.Roofline), and how close the time came.
    roofline: dict[str, Any] | None = None
    sol_pct: float | None = None
    # Per baseline: time_ms, ci95_ms, speedup (baseline time over the candidate's), sol_pct; or error.
    baselines: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class Verdict:
    """The judge's answer for one candidate on one problem."""

    status: str
    reason: str
    task: str
    solution: str
    device: str
    speedup: float | None = None
    configs: list[ConfigResult] = field(default_factory=list)
    skipped_configs: list[dict[str, Any]] = field(default_factory=list)
    baseline: str = "eager PyTorch"
    # Geometric-mean speedup against each baseline timed (eager's is `speedup`).
    speedups: dict[str, float] = field(default_factory=dict)
    # How times were taken (L2 state, launch mode) and the device peaks the roofline used.
    timing: dict[str, Any] = field(default_factory=dict)
    peaks: dict[str, Any] | None = None
    dtype: str | None = None
    wall_s: float = 0.0
    torch_ops: dict[str, int] = field(default_factory=dict)
    isolation: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    artifacts: dict[str, str] = field(default_factory=dict)

    def note(self, text: str) -> None:
        """Add a note once."""
        if text not in self.notes:
            self.notes.append(text)

    @property
    def correct(self) -> bool:
        """True when every config checked came out correct."""
        return self.status == "correct"

    def to_dict(self, samples: bool = False) -> dict[str, Any]:
        """The JSON form; raw timing samples only when asked for."""
        data = asdict(self)
        if not samples:
            for config in data["configs"]:
                for key in ("timing", "baseline_timing"):
                    for raw in RAW_KEYS:
                        if config[key]:
                            config[key].pop(raw, None)
        return _finite(data)


def _finite(value: Any) -> Any:
    """JSON has no inf or NaN: write them as strings so the output stays parseable."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def overall_status(statuses: list[str]) -> str:
    """The status of a verdict from its configs' statuses."""
    return min(statuses, key=PRECEDENCE.index) if statuses else "correct"


def geometric_mean(values: list[float]) -> float | None:
    """Geometric mean of positive values; None when there are none."""
    positive = [v for v in values if v and v > 0]
    if not positive:
        return None
    return math.exp(sum(math.log(v) for v in positive) / len(positive))
