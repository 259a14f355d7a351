"""Screen, then confirm: how a search times a correct candidate (EvalOptions.confirm_margin set).

A search needs a precise time only for kernels that could be the best. So each config of a correct
candidate is first timed by the screen (timing/protocol.screen_plan: exclusive, a few milliseconds), in
the same hold as its baselines; the full protocol (and the re-check of its timed outputs) follows in that
hold only when the screen says the candidate could be the best of the run:

    reach × (1 + margin) ≥ bar

`reach` is the candidate's screened speedup at the fast end of its screen's own spread (eager's time over
the low end of each screened median's 95 % interval, geometric mean over configs); `margin` covers what that
interval does not, a screen pessimistic as a whole (timing/protocol.SCREEN_MARGIN says how it is chosen);
`bar` is the fastest known: the run's best confirmed speedup so far, or the baseline's 1x while none is
faster. A candidate whose screen was pessimistic by up to the margin is still confirmed.

One that is not gets no time: its verdict says "screened: 0.61x eager PyTorch, not confirmed", keeps the
screened speedup in `Verdict.screen` and each config's screened median in `ConfigResult.screened_ms`, and
leaves every time and speedup empty, so that no store, report or export can take it for a measurement. A
screen window that another process shared decides nothing: the candidate is confirmed.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from cudasmith.harness.verdict import geometric_mean
from cudasmith.harness.wire.results import ScreenReport, Timing

# The baseline's own speedup: the bar while the run has no faster kernel confirmed.
BASELINE_BAR = 1.0


@dataclass(frozen=True)
class Screened:
    """One config's screen: eager PyTorch's time on it (ms, the full protocol's, as every speedup's), the
    screen's measurement, and whether its window had the device alone."""

    eager_ms: float
    timing: Timing
    exclusive: bool


def decide(screens: Sequence[Screened], bar: float, margin: float, seconds: float = 0.0) -> ScreenReport:
    """Whether a candidate screened on every config could be the best (see the module's docstring)."""
    speedup = geometric_mean([s.eager_ms / s.timing.median_ms for s in screens if s.timing.median_ms > 0])
    lows = [min(s.timing.ci95_ms[0], s.timing.median_ms) for s in screens]
    reach = geometric_mean([s.eager_ms / low for s, low in zip(screens, lows, strict=True) if low > 0])
    report = ScreenReport(speedup, reach, bar, margin, confirmed=False, seconds=round(seconds, 4))
    if any(not s.exclusive for s in screens):
        report.confirmed, report.why = True, "a screen window was shared with another process"
    elif reach is None or len(lows) != len(screens):
        report.confirmed, report.why = True, "a screen gave no time"
    else:
        report.confirmed = reach * (1 + margin) >= bar
    return report


def describe(report: ScreenReport, baseline: str) -> str:
    """The screen in a verdict's reason: '; screened: 0.61x eager PyTorch, not confirmed (…)'."""
    shown = "–" if report.speedup is None else f"{report.speedup:.2f}x"
    if report.confirmed:
        return f"; screened at {shown}, confirmed"
    return (
        f"; screened: {shown} {baseline}, not confirmed (at most {report.reach or 0:.2f}x within its spread; "
        f"the bar {report.bar:.2f}x less the margin of {report.margin:.0%})"
    )


class ConfirmBar:
    """The bar of one session (see the module's docstring): the best confirmed speedup it knows of, from its
    own verdicts and from what the run told it (exec passes the run's best with each candidate), at least
    the baseline's. It only rises. Safe from several threads."""

    def __init__(self) -> None:
        self._best = BASELINE_BAR
        self._lock = threading.Lock()

    def raise_to(self, speedup: float | None) -> None:
        """A confirmed speedup: the bar rises to it if it is higher."""
        if speedup is None or not speedup > 0:
            return
        with self._lock:
            self._best = max(self._best, speedup)

    def __call__(self) -> float:
        with self._lock:
            return self._best
