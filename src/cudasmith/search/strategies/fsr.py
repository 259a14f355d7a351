"""`fsr`: CUDA-LLM's Feature Search and Reinforcement. N candidates per round, D rounds.

Round 0 asks for the task from scratch. Each later round is seeded by the fastest correct kernel so far
with its verdict (time per config against every baseline, % of speed of light, ptxas and Nsight Compute
facts) and the last round's failures (deduplicated, trimmed); while nothing is correct, it repairs the
most promising failure instead. When the round's new best declares tunables, a few variants are judged
before the round ends. The search stops after `patience` rounds with no gain beyond the timing noise,
after `depth` rounds, or when the budget is spent (the driver's part).
"""

from __future__ import annotations

from dataclasses import replace

from cudasmith.search.strategies.base import (
    Event,
    Proposal,
    SearchCandidate,
    SearchContext,
    Strategy,
    best,
    most_repairable,
)
from cudasmith.search.strategies.digest import failures_block
from cudasmith.search.tunables import variants


class FSR(Strategy):
    """Feature Search and Reinforcement."""

    name = "fsr"

    def __init__(self, context: SearchContext) -> None:
        super().__init__(context)
        self.round = 0
        self.asked: dict[int, int] = {}
        self.unsettled: dict[int, set[str]] = {}
        self.swept: set[int] = set()
        self.pending_sweep: Proposal | None = None
        self.best_at_start: SearchCandidate | None = None
        self.stalled = 0
        self.stop_reason: str | None = None
        self._prompts: dict[int, Proposal] = {}

    def proposed(self, proposal: Proposal) -> None:
        self.unsettled.setdefault(proposal.round, set()).add(proposal.key)
        if proposal.operator == "tunable":
            self.swept.add(proposal.round)
            self.pending_sweep = None
        else:
            self.asked[proposal.round] = self.asked.get(proposal.round, 0) + 1

    def _template(self, round_number: int) -> Proposal:
        """The round's request: every candidate of a round gets the same prompt."""
        if round_number in self._prompts:
            return self._prompts[round_number]
        context = self.context
        everything = list(context.candidates.values())
        parent = best(everything) or most_repairable(everything)
        operator = "first" if parent is None else ("refine" if parent.correct else "repair")
        last_round = [c for c in everything if c.round == round_number - 1 and c is not parent]
        failures = failures_block(
            last_round, context.config.fsr.failures_shown, context.config.fsr.feedback_chars
        )
        extras = context.extras() + ([("failures", {"failures": failures})] if failures else [])
        prompt = context.builder.build(
            context.problem,
            context.device,
            context.hardware,
            parent=None if parent is None else parent.as_parent(),
            extras=extras,
        )
        template = Proposal(
            key="",
            round=round_number,
            operator=operator,
            parents=() if parent is None else (parent.id,),
            prompt=prompt,
            parent_source=None if parent is None else parent.source,
        )
        self._prompts[round_number] = template
        return template

    def propose(self, limit: int) -> list[Proposal]:
        if self.stop_reason is not None:
            return []
        if self.pending_sweep is not None:
            return [self.pending_sweep]
        asked = self.asked.get(self.round, 0)
        wanted = min(self.context.config.n, asked + limit)
        if asked >= wanted:
            return []
        template = self._template(self.round)
        return [replace(template, key=f"r{self.round}/c{index}") for index in range(asked, wanted)]

    def settled(self, proposal: Proposal, candidates: list[SearchCandidate]) -> list[Event]:
        self.unsettled.get(proposal.round, set()).discard(proposal.key)
        if proposal.round != self.round or self.unsettled[self.round]:
            return []
        if self.asked.get(self.round, 0) < self.context.config.n:
            return []
        if self.round not in self.swept and (sweep := self._sweep()) is not None:
            self.pending_sweep = sweep
            return []
        return self._end_round()

    def _sweep(self) -> Proposal | None:
        """Variants of the round's new best, when it declares tunables."""
        top = best(list(self.context.candidates.values()))
        trials = self.context.config.tunable_trials
        if (
            top is None
            or top.round != self.round
            or top.source is None
            or not trials
            or not self.context.tunables
        ):
            return None
        found = variants(top.source, trials)
        if not found:
            return None
        return Proposal(
            key=f"r{self.round}/tune",
            round=self.round,
            operator="tunable",
            parents=(top.id,),
            sources=tuple(source for source, _ in found),
            meta={"values": [values for _, values in found]},
        )

    def _end_round(self) -> list[Event]:
        top = best(list(self.context.candidates.values()))
        before = self.best_at_start
        if before is None:
            gained = top is not None
        else:
            threshold = (before.speedup or 0.0) * (1 + max(self.context.config.noise, before.noise()))
            gained = top is not None and top is not before and (top.speedup or 0.0) > threshold
        if top is not None:
            self.stalled = 0 if gained else self.stalled + 1
        event = Event(
            f"round/{self.round}",
            "round",
            {
                "round": self.round,
                "best": top.id if top else None,
                "speedup": top.speedup if top else None,
                "gain": gained,
            },
        )
        self.best_at_start = top
        if self.stalled >= self.context.config.patience:
            self.stop_reason = f"no gain beyond the timing noise in {self.stalled} rounds"
        elif self.round + 1 >= self.context.config.depth:
            self.stop_reason = f"all {self.context.config.depth} rounds run"
        else:
            self.round += 1
        return [event]

    def finished(self) -> str | None:
        return self.stop_reason

    def progress(self) -> str:
        return f"round {self.round + 1} of {self.context.config.depth}"
