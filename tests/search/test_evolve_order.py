"""`evolve` builds the same lineage from the same seed and answers whatever order its verdicts arrive in:
the strategy is driven here without a model or a judge, its proposals settled in shuffled orders."""

from __future__ import annotations

import hashlib
import random

import pytest

from cudasmith.harness.verdict import Verdict
from cudasmith.harness.wire.status import Status
from cudasmith.search.config import EvolveConfig, OptimizeConfig
from cudasmith.search.hardware import describe_hardware
from cudasmith.search.prompts import PromptBuilder
from cudasmith.search.strategies import STRATEGIES, SearchContext
from cudasmith.search.strategies.base import Proposal, SearchCandidate
from cudasmith.tasks.problem import load_problem

from conftest import PROBLEMS

PROBLEM = load_problem(PROBLEMS / "add_small.py")


def verdict_for(key: str) -> Verdict:
    """A verdict that depends on the proposal alone: about a third wrong, the rest at assorted speeds."""
    digest = int(hashlib.sha256(key.encode()).hexdigest(), 16)
    if digest % 3 == 0:
        return Verdict(Status.INCORRECT, "wrong", PROBLEM.name, "s.py", "cpu")
    return Verdict(Status.CORRECT, "ok", PROBLEM.name, "s.py", "cpu", speedup=0.5 + (digest % 97) / 40)


def lineage(order_seed: int, lanes: int = 1, view_lag: int | None = None) -> list[tuple[object, ...]]:
    """Run an evolve search to its end, settling what is in the air in an order drawn from `order_seed`;
    return each proposal as (key, operator, island, parents, a digest of its prompt)."""
    islands = EvolveConfig(islands=3, migration_interval=2, view_lag=view_lag)
    config = OptimizeConfig(strategy="evolve", n=3, depth=5, max_in_flight=2, max_queued=1, evolve=islands)
    context = SearchContext(PROBLEM, "cpu", PromptBuilder(), describe_hardware("cpu"), config, seed=7)
    context.lanes = lanes
    strategy = STRATEGIES["evolve"](context)
    shuffle = random.Random(order_seed)
    in_air: list[tuple[Proposal, list[SearchCandidate]]] = []
    made: list[tuple[object, ...]] = []
    ids = iter(range(1, 10_000))
    while strategy.finished() is None:
        for proposal in strategy.propose(limit=shuffle.randint(1, 3)):
            strategy.proposed(proposal)
            prompt = "" if proposal.prompt is None else repr(proposal.prompt.messages())
            digest = hashlib.sha256(prompt.encode()).hexdigest()[:12]
            made.append((proposal.key, proposal.operator, proposal.island, proposal.parents, digest))
            # Answers come at once, in the order asked: ids are given then; only verdicts are shuffled.
            sources = proposal.sources or (f"# code of {proposal.key}\n",)
            candidates = [
                SearchCandidate(
                    next(ids),
                    proposal.key,
                    proposal.round,
                    proposal.operator,
                    proposal.parents,
                    proposal.island,
                    source,
                    verdict=verdict_for(f"{proposal.key}/{k}"),
                )
                for k, source in enumerate(sources)
            ]
            in_air.append((proposal, candidates))
        assert in_air, "the strategy waits for nothing yet proposes nothing"
        proposal, candidates = in_air.pop(shuffle.randrange(len(in_air)))
        for candidate in candidates:
            context.candidates[candidate.id] = candidate
        strategy.settled(proposal, candidates)
    assert not in_air, f"stopped ({strategy.finished()}) with proposals unsettled"
    return made


@pytest.mark.parametrize(("lanes", "view_lag"), [(1, None), (2, None), (1, 0)])
def test_the_same_seed_and_answers_give_the_same_lineage_in_any_verdict_order(
    lanes: int, view_lag: int | None
) -> None:
    first = lineage(0, lanes, view_lag)
    assert len(first) >= 15 and any(parents for _, _, _, parents, _ in first)
    for order_seed in range(1, 6):
        assert lineage(order_seed, lanes, view_lag) == first, f"verdict order {order_seed}"


def test_a_proposal_waits_for_the_verdicts_its_view_needs() -> None:
    islands = EvolveConfig(islands=1, view_lag=0)
    config = OptimizeConfig(strategy="evolve", n=2, depth=2, evolve=islands)
    context = SearchContext(PROBLEM, "cpu", PromptBuilder(), describe_hardware("cpu"), config, seed=1)
    strategy = STRATEGIES["evolve"](context)
    [first] = strategy.propose(limit=4)
    strategy.proposed(first)
    assert strategy.propose(limit=4) == [], "with no lag, the next proposal needs the first's verdict"
    candidate = SearchCandidate(
        1, first.key, 0, first.operator, source="# code\n", verdict=verdict_for("x/1")
    )
    context.candidates[1] = candidate
    strategy.settled(first, [candidate])
    [second] = strategy.propose(limit=4)
    assert second.operator != "first" and second.parents == (1,)
