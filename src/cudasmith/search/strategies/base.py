"""The strategy interface: a strategy proposes requests from the run's history and takes in what became
of each (its candidates and their verdicts); the driver does the asking, parsing and judging.

A proposal either asks a model (a prompt) or carries candidate files itself (tunable variants). Its key
is unique in the run and stable: a resumed run matches stored calls by it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

from cudasmith.harness.verdict import Verdict
from cudasmith.jsontypes import JsonDict, JsonObject
from cudasmith.search.config import OptimizeConfig
from cudasmith.search.hardware import Hardware
from cudasmith.search.prompts import Parent, Prompt, PromptBuilder
from cudasmith.store.metrics import fastest_first, screened_speedup_of, sol_pct_of, speedup_of
from cudasmith.store.shapes import CandidateMeta, ProposalMeta, StoredProposal
from cudasmith.tasks.problem import Problem

# How promising a failure is to repair, best first (an answer with no code at all comes last).
REPAIR_ORDER = ("incorrect", "runtime_error", "timeout", "rejected", "compile_error")


@dataclass(frozen=True)
class Proposal:
    """One request of a strategy: a prompt for a model, or candidate files made without one."""

    key: str
    round: int
    operator: str
    parents: tuple[int, ...] = ()
    island: int | None = None
    prompt: Prompt | None = None
    model: str | None = None
    n: int = 1
    sources: tuple[str, ...] = ()
    parent_source: str | None = None
    meta: ProposalMeta = field(default_factory=lambda: ProposalMeta())

    def to_dict(self) -> StoredProposal:
        """What the store keeps of it besides the prompt (which its call's request holds)."""
        return {
            "key": self.key,
            "round": self.round,
            "operator": self.operator,
            "parents": list(self.parents),
            "island": self.island,
            "model": self.model,
            "n": self.n,
            "sources": list(self.sources),
            "parent_source": self.parent_source,
            "meta": self.meta,
        }

    @classmethod
    def from_dict(cls, data: JsonObject, prompt: Prompt | None = None) -> Proposal:
        """A proposal from its stored form (StoredProposal)."""
        fields = {**data, "parents": tuple(data["parents"]), "sources": tuple(data["sources"])}
        return cls(**fields, prompt=prompt)


@dataclass
class SearchCandidate:
    """A candidate as a strategy sees it: where it came from, its code, and what the judge said."""

    id: int
    proposal: str
    round: int
    operator: str
    parents: tuple[int, ...] = ()
    island: int | None = None
    source: str | None = None
    model: str | None = None
    verdict: Verdict | None = None
    skipped: str | None = None
    facts: tuple[str, ...] = ()
    meta: CandidateMeta = field(default_factory=lambda: CandidateMeta())

    @property
    def correct(self) -> bool:
        return self.verdict is not None and self.verdict.correct

    @property
    def speedup(self) -> float | None:
        """The geometric-mean speedup over eager PyTorch when correct and timed."""
        return speedup_of(self.verdict)

    @property
    def screened_speedup(self) -> float | None:
        """The screened speedup of a correct candidate that the judge's screen did not confirm (it has no
        time: harness/confirm.py); None otherwise."""
        return screened_speedup_of(self.verdict)

    def as_parent(self) -> Parent:
        """This candidate as the solution a prompt asks to improve."""
        assert self.source is not None and self.verdict is not None
        return Parent(self.source, self.verdict, self.facts)

    def noise(self) -> float:
        """The relative half-width of the widest 95 % interval of its times (0 when not timed)."""
        widths = [0.0]
        for config in self.verdict.configs if self.verdict else []:
            if config.time_ms and config.time_ci95_ms and len(config.time_ci95_ms) == 2:
                low, high = config.time_ci95_ms
                widths.append((high - low) / 2 / config.time_ms)
        return max(widths)

    def sol_pct(self) -> float | None:
        """Its % of speed of light (the median over its timed configs), where known."""
        return sol_pct_of(self.verdict)


def rank(candidate: SearchCandidate) -> tuple[float, int]:
    """Sort key, best first: correct by speedup (a screened one by its screened speedup, untimed correct
    ones as 1x), then failures by how repairable they are; the earlier of equals."""
    if candidate.correct:
        return fastest_first(candidate.speedup or candidate.screened_speedup, candidate.id)
    status = candidate.verdict.status if candidate.verdict else None
    order = REPAIR_ORDER.index(status) if status in REPAIR_ORDER else len(REPAIR_ORDER)
    return (float(order + 1), -candidate.id)


def best(candidates: list[SearchCandidate]) -> SearchCandidate | None:
    """The fastest correct candidate."""
    correct = [c for c in candidates if c.correct]
    return min(correct, key=rank) if correct else None


def most_repairable(candidates: list[SearchCandidate]) -> SearchCandidate | None:
    """The failure most worth repairing: it has code and a verdict, and the least severe status."""
    failed = [c for c in candidates if c.source is not None and c.verdict is not None and not c.correct]
    return min(failed, key=rank) if failed else None


@dataclass
class SearchContext:
    """What strategies share: the task, where it runs, the prompt builder, the settings, and every
    candidate of the run so far (kept by the driver)."""

    problem: Problem
    device: str
    builder: PromptBuilder
    hardware: Hardware
    config: OptimizeConfig
    seed: int
    tunables: bool = True
    lanes: int = 1
    candidates: dict[int, SearchCandidate] = field(default_factory=dict)

    def extras(self) -> list[tuple[str, dict[str, str]]]:
        """Sections every prompt of the search carries: how to declare tunables, when they are swept."""
        return [("tunables", {})] if self.tunables and self.config.tunable_trials else []


@dataclass(frozen=True)
class Event:
    """Something a strategy did that the run store records once (a round ended, islands migrated)."""

    key: str
    kind: str
    data: JsonDict


class Strategy(ABC):
    """Proposes requests from the history and takes in their outcomes."""

    name: ClassVar[str]

    def __init__(self, context: SearchContext) -> None:
        self.context = context

    @abstractmethod
    def propose(self, limit: int) -> list[Proposal]:
        """Up to `limit` new proposals now; none when it must wait for verdicts (or is finished)."""

    def proposed(self, proposal: Proposal) -> None:
        """A proposal was made (called live, and for each stored one when a run resumes)."""
        return None

    @abstractmethod
    def settled(self, proposal: Proposal, candidates: list[SearchCandidate]) -> list[Event]:
        """A proposal's candidates all have verdicts (or were skipped); none when its call failed."""

    @abstractmethod
    def finished(self) -> str | None:
        """Why the search is over, or None while it goes on."""

    def progress(self) -> str:
        """Where the search stands, for the live display (e.g. 'round 2 of 5')."""
        return ""
