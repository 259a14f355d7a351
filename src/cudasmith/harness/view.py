"""What a candidate's correctness rounds and timing read of their session, and nothing more.

A session (session.py) makes one SessionView once it has started: the problem loaded and described, the
configs chosen, the timing plan known. correctness.py and timed.py take that view, not the session: they
read its fields, ask the judge's worker (the oracle), time baselines and hold the device's lease through
it, and never import the session, which imports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cudasmith.harness.baselines import SessionBaselines
from cudasmith.harness.confirm import ConfirmBar
from cudasmith.harness.lease import TimingLease
from cudasmith.harness.options import EvalOptions, Progress
from cudasmith.harness.wire.results import ConfigDescription
from cudasmith.harness.witnesses.oracle import Oracle
from cudasmith.tasks.problem import Config, Problem
from cudasmith.timing.protocol import TimingPlan


@dataclass(frozen=True)
class SessionView:
    """A started session as its candidates' rounds see it. The oracle, lease and baselines are the
    session's own (shared by the candidates in flight); the rest is fixed for the session's life."""

    problem: Problem
    options: EvalOptions
    secret: int
    # The configs judged on this device (index, config, hidden), and each config's size and work.
    selected: tuple[tuple[int, Config, bool], ...]
    described: tuple[ConfigDescription, ...]
    plan: TimingPlan
    oracle: Oracle
    lease: TimingLease
    baselines: SessionBaselines
    progress: Progress
    # Whose workers these are, as the lease names a session (its holds pause other sessions' judges).
    owner: object
    # What a screened candidate must come near to be confirmed (confirm.py; used with options.confirm_margin).
    bar: ConfirmBar = field(default_factory=ConfirmBar)

    def progress_line(self, what: str) -> None:
        self.progress(what, 0, 0)

    def call_limit(self, index: int) -> float:
        """The time limit of one call on a config (from --time-limit, or from the reference's own time)."""
        return self.options.call_limit_s(self.oracle.call_seconds.get(index))

    def output_bytes(self, index: int) -> int:
        return (self.described[index].output_bytes or 0) if index < len(self.described) else 0
