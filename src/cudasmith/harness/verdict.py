"""The verdict: what the judge says of one candidate on one problem, as data and as JSON (docs/DESIGN.md)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, TypedDict

from cudasmith.device import DevicePeaks
from cudasmith.errors import UsageError
from cudasmith.harness.wire.fields import JsonObject, known_fields
from cudasmith.harness.wire.results import BaselineEntry, Mismatch, ScreenReport, Timing, TimingReport
from cudasmith.harness.wire.status import CONFIG_STATUSES, STATUSES, Rule, Status
from cudasmith.harness.witnesses.roofline import Roofline
from cudasmith.jsontypes import JsonDict
from cudasmith.tasks.problem import Config

# When configs disagree, the verdict takes the status that comes first here (configs not checked do not
# count).
PRECEDENCE = (
    Status.TIMEOUT,
    Status.COMPILE_ERROR,
    Status.REJECTED,
    Status.RUNTIME_ERROR,
    Status.INCORRECT,
    Status.CORRECT,
)


class Isolation(TypedDict, total=False):
    """What walled the candidate's process in, as its supervisor reported: the network's and the
    filesystem's isolation (harness/walls/sandbox.py words them), and the stray processes it killed."""

    network: str | None
    filesystem: str | None
    stray_processes_killed: int


@dataclass(frozen=True)
class Failure:
    """A candidate that failed before any config was checked (loading it, or its worker's end): the
    verdict's status, reason and rule."""

    status: Status
    reason: str
    rule: Rule | None


@dataclass
class SkippedConfig:
    """A config not run on this device, and why (too large for the CPU)."""

    index: int
    # The config, or "hidden" for a hidden one.
    config: Config | str
    reason: str


@dataclass
class ConfigResult:
    """One config's outcome: correctness over its input sets, then (when correct) times against baselines."""

    index: int
    # The config, or "hidden#N" for a hidden one.
    config: Config | str
    hidden: bool
    status: Status = Status.CORRECT
    reason: str = ""
    # The rule broken, or the failure's kind (None while correct).
    rule: Rule | None = None
    seeds_checked: int = 0
    rel_err: float | None = None
    max_abs_err: float | None = None
    time_ms: float | None = None
    time_ci95_ms: list[float] | None = None
    baseline_ms: float | None = None
    speedup: float | None = None
    # The speedup's range from the two medians' 95 % intervals (eager's low end over the candidate's high
    # end, and the other way round): wider than the ratio's own interval, never narrower.
    speedup_ci95: list[float] | None = None
    # A time (the candidate's or eager's) whose sampling stopped before its median was known to the
    # protocol's noise target: the verdict warns, with the intervals.
    noisy: bool = False
    mismatch: Mismatch | None = None
    timing: Timing | None = None
    baseline_timing: Timing | None = None
    # Work, speed of light and floor of this config (roofline.Roofline), and how close the time came.
    roofline: Roofline | None = None
    sol_pct: float | None = None
    # Per baseline: its time, the speedup against it (its time over the candidate's), its % of speed of
    # light, how and when it was measured; or an error.
    baselines: dict[str, BaselineEntry] = field(default_factory=dict)
    # Share of the candidate's GPU time (CPU time on the CPU) in its own kernels while timed.
    own_share: float | None = None
    # Timed calls whose outputs were re-checked against the reference.
    checked_calls: int = 0
    # Whether the config was checked with module parameters drawn by the judge (the same for Model and ModelNew).
    parameters_drawn: bool = False
    # KernelBench's own check (check.kernelbench_allclose) on the input sets this config was checked on.
    kernelbench_tolerance: bool | None = None
    # The screen's median (ms) where a search screened the candidate (harness/confirm.py): never a time of
    # the verdict's; `time_ms` is the full protocol's, and stays empty when the screen was not confirmed.
    screened_ms: float | None = None

    def fail(self, status: Status, reason: str, rule: Rule | None = None) -> None:
        """Record this config's failure: its status, reason, and rule (by default the status's own)."""
        self.status, self.reason, self.rule = status, reason, rule or Rule.of_status(status)

    def to_dict(self, samples: bool = False) -> JsonDict:
        """The JSON form; raw timing samples only when asked for."""
        data = asdict(
            replace(self, timing=None, baseline_timing=None, roofline=None, baselines={}, mismatch=None)
        )
        data["status"] = str(self.status)
        data["rule"] = str(self.rule) if self.rule else None
        data["mismatch"] = self.mismatch.to_dict() if self.mismatch else None
        data["timing"] = self.timing.to_dict(samples) if self.timing else None
        data["baseline_timing"] = self.baseline_timing.to_dict(samples) if self.baseline_timing else None
        data["roofline"] = self.roofline.to_dict() if self.roofline else None
        data["baselines"] = {name: entry.to_dict() for name, entry in self.baselines.items()}
        return data

    @classmethod
    def from_dict(cls, data: JsonObject) -> ConfigResult:
        """From its JSON form; unknown keys are ignored."""
        values = known_fields(cls, data)
        if values.get("status") in CONFIG_STATUSES:
            values["status"] = Status(values["status"])
        values["rule"] = _rule(values.get("rule"), values.get("status"))
        for name in ("timing", "baseline_timing"):
            if isinstance(values.get(name), dict):
                values[name] = Timing.from_dict(values[name])
        if isinstance(values.get("roofline"), dict):
            values["roofline"] = Roofline.from_dict(values["roofline"])
        if isinstance(values.get("mismatch"), dict):
            values["mismatch"] = Mismatch.from_dict(values["mismatch"])
        baselines = values.get("baselines") or {}
        values["baselines"] = {
            n: BaselineEntry.from_dict(e) for n, e in baselines.items() if isinstance(e, dict)
        }
        return cls(**values)


@dataclass
class Verdict:
    """The judge's answer for one candidate on one problem."""

    status: Status
    reason: str
    task: str
    solution: str
    device: str
    # The rule a rejection broke, or a failure's kind (wire/status.py); None when correct.
    rule: Rule | None = None
    speedup: float | None = None
    # Geometric means of the configs' speedup_ci95 ends.
    speedup_ci95: list[float] | None = None
    configs: list[ConfigResult] = field(default_factory=list)
    skipped_configs: list[SkippedConfig] = field(default_factory=list)
    baseline: str = "eager PyTorch"
    # Geometric-mean speedup against each baseline timed (eager's is `speedup`).
    speedups: dict[str, float] = field(default_factory=dict)
    # How times were taken (L2 state, launch mode) and the device peaks the roofline used.
    timing: TimingReport | None = None
    # A search's screen of the candidate and whether it was confirmed (harness/confirm.py); None where every
    # correct candidate gets the full protocol (eval, bench, optimize --confirm-all).
    screen: ScreenReport | None = None
    peaks: DevicePeaks | None = None
    dtype: str | None = None
    wall_s: float = 0.0
    # The session's secret seed: `--seed` with it draws the same input sets again.
    seed: int | None = None
    # Time limits this candidate ran under, in seconds.
    limits: dict[str, float] = field(default_factory=dict)
    torch_ops: dict[str, int] = field(default_factory=dict)
    # Share of the candidate's timed GPU (or CPU) time in its own kernels, over all timed configs.
    own_share: float | None = None
    isolation: Isolation = field(default_factory=lambda: Isolation())
    # The rules judged under: "strict" (the solution's own kernels do the work) or "kernelbench" (PyTorch
    # compute allowed everywhere, as KernelBench allows it).
    rules: str = "strict"
    # Which module parameters the checks used: drawn by the judge, or the default initialisation and why.
    parameters: str | None = None
    # Seconds ModelNew's constructors took (their builds included), over the configs checked.
    build_s: float | None = None
    # KernelBench's own check on every input set compared (True, False, or None where none applied), reported
    # beside ours: a kernel we call incorrect may be within KernelBench's tolerance, and the reverse.
    kernelbench_tolerance: bool | None = None
    notes: list[str] = field(default_factory=list)
    artifacts: dict[str, str] = field(default_factory=dict)

    def note(self, text: str) -> None:
        """Add a note once."""
        if text not in self.notes:
            self.notes.append(text)

    @property
    def correct(self) -> bool:
        """True when every config checked came out correct."""
        return self.status == Status.CORRECT

    @property
    def screened_only(self) -> bool:
        """Correct, screened and not confirmed: it has a screened speedup and no time (harness/confirm.py)."""
        return self.screen is not None and not self.screen.confirmed

    def to_dict(self, samples: bool = False) -> JsonDict:
        """The JSON form; raw timing samples only when asked for."""
        data = asdict(replace(self, configs=[], timing=None))
        data["status"] = str(self.status)
        data["rule"] = str(self.rule) if self.rule else None
        data["timing"] = self.timing.to_dict() if self.timing else {}
        data["configs"] = [config.to_dict(samples) for config in self.configs]
        return _finite(data)

    @classmethod
    def from_dict(cls, data: JsonObject) -> Verdict:
        """A Verdict from its JSON form (what `cudasmith eval --json` prints); unknown keys are ignored."""
        if not isinstance(data, dict) or data.get("status") not in STATUSES or "reason" not in data:
            raise UsageError("not a verdict: a JSON object with a known 'status' and a 'reason' is expected")
        configs = [ConfigResult.from_dict(entry) for entry in data.get("configs", [])]
        known = known_fields(cls, data)
        known.pop("configs", None)
        values = {"task": "", "solution": "", "device": "", **known}
        values["status"] = Status(values["status"])
        values["rule"] = _rule(values.get("rule"), values["status"])
        if isinstance(values.get("timing"), dict):
            values["timing"] = TimingReport.from_dict(values["timing"]) if values["timing"] else None
        if isinstance(values.get("peaks"), dict):
            values["peaks"] = DevicePeaks.from_dict(values["peaks"])
        if isinstance(values.get("screen"), dict):
            values["screen"] = ScreenReport.from_dict(values["screen"])
        skipped = values.get("skipped_configs") or []
        values["skipped_configs"] = [SkippedConfig(**entry) for entry in skipped if isinstance(entry, dict)]
        return cls(**values, configs=configs)


def _rule(value: object, status: object) -> Rule | None:
    """A rule read from JSON: the one named, else (a verdict made before rules were named, or a file of a
    user's) the status's own; a correct verdict names none."""
    if not isinstance(status, Status) or status in (Status.CORRECT, Status.NOT_CHECKED):
        return None
    return Rule.parse(value, status)


def _finite(value: Any) -> Any:
    """JSON has no inf or NaN: write them as strings so the output stays parseable."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def overall_status(statuses: list[Status]) -> Status:
    """The status of a verdict from its configs' statuses (those not checked left out)."""
    checked = [status for status in statuses if status is not Status.NOT_CHECKED]
    return min(checked, key=PRECEDENCE.index) if checked else Status.CORRECT


def geometric_mean(values: Iterable[float | None]) -> float | None:
    """Geometric mean of positive values; None when there are none."""
    positive = [v for v in values if v and v > 0]
    if not positive:
        return None
    return math.exp(sum(math.log(v) for v in positive) / len(positive))
