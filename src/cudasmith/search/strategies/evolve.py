"""`evolve`: an evolutionary search in the manner of AlphaEvolve, OpenEvolve and robust-kbench.

Proposals go to the islands in turn. Each picks a parent from its island, by exploitation (the elites
of the MAP-Elites grid), exploration (any member of the island) or at random (any member of any
island); shows the island's best and a diverse elite as inspirations; and asks for SEARCH/REPLACE edits
or a full rewrite of the parent, or now and then for a crossover with a second good solution. Every
`migration_interval` generations each island sends its best along the ring. A new best that declares
tunables gets a sweep without a model call. Novelty (no duplicates judged) is the driver's part.

It stops after n × depth model proposals, or after patience × n settled proposals without a gain
beyond the timing noise once something is correct.

Verdicts come back in whatever order the judge's lanes finish, so the population takes them in the order
their proposals were made, and proposal k is built from exactly the verdicts of proposals 0 … k-1-lag
(`view_lag`; by default as many as the driver keeps in the air at once, so the judge never waits for a
view). Same seed, same answers: same lineage, however the verdicts arrive.
"""

from __future__ import annotations

import random

from cudasmith.search.strategies.base import (
    Event,
    Proposal,
    SearchCandidate,
    SearchContext,
    Strategy,
    best,
    rank,
)
from cudasmith.search.strategies.digest import inspirations_block, summary_line
from cudasmith.search.strategies.population import Population, cell_of
from cudasmith.search.tunables import variants

# Characters of inspiration code in one prompt.
INSPIRATION_CHARS = 12000


class Evolve(Strategy):
    """Islands, MAP-Elites, parents by exploitation, exploration or chance, inspirations, diffs and
    crossover."""

    name = "evolve"

    def __init__(self, context: SearchContext) -> None:
        super().__init__(context)
        self.population = Population(context.config.evolve)
        self.asked = 0
        self.made = 0
        self.order: dict[str, int] = {}
        self.waiting: dict[int, tuple[Proposal, list[SearchCandidate]]] = {}
        self.taken = 0
        self.known: dict[int, SearchCandidate] = {}
        self.events: list[Event] = []
        self.sweeps: list[Proposal] = []
        self.swept: set[int] = set()
        self.top: SearchCandidate | None = None
        self.since_gain = 0
        self.stop_reason: str | None = None

    @property
    def total(self) -> int:
        return self.context.config.n * self.context.config.depth

    @property
    def lag(self) -> int:
        """How many of the newest proposals a new one is built without."""
        config = self.context.config
        if config.evolve.view_lag is not None:
            return config.evolve.view_lag
        return self.context.lanes * (config.max_in_flight + config.max_queued + 1)

    def proposed(self, proposal: Proposal) -> None:
        self.order[proposal.key] = self.made
        self.made += 1
        if proposal.operator == "tunable":
            self.swept.add(proposal.parents[0])
            self.sweeps = [s for s in self.sweeps if s.key != proposal.key]
        else:
            self.asked += 1

    def propose(self, limit: int) -> list[Proposal]:
        chosen: list[Proposal] = []
        while len(chosen) < limit and self.stop_reason is None:
            if not self._take(self.made + len(chosen) - self.lag):
                break  # its view needs a verdict still to come
            sweep = next((s for s in self.sweeps if s not in chosen), None)
            asked = self.asked + sum(p.operator != "tunable" for p in chosen)
            if sweep is not None:
                chosen.append(sweep)
            elif asked < self.total:
                chosen.append(self._proposal(asked))
            else:
                break
        return chosen

    def _members(self, island: int) -> list[SearchCandidate]:
        known = self.known
        return [known[m] for m in self.population.islands[island] if known[m].source is not None]

    def _parent(self, island: int, rng: random.Random) -> SearchCandidate | None:
        members = self._members(island)
        if not members:
            return None
        everyone = self.known
        config = self.context.config.evolve
        draw = rng.random()
        if draw < config.exploitation:
            elites = sorted((everyone[e] for e in self.population.elites()), key=rank)
            local = [e for e in elites if e.id in self.population.islands[island]]
            pool = local or elites
            if pool:
                return rng.choices(pool, weights=[1 / (k + 1) for k in range(len(pool))])[0]
            return min(members, key=rank)
        if draw < config.exploitation + config.exploration:
            return rng.choice(members)
        return rng.choice([everyone[m] for island_members in self.population.islands for m in island_members])

    def _inspirations(
        self, island: int, parent: SearchCandidate, rng: random.Random
    ) -> list[SearchCandidate]:
        config = self.context.config.evolve
        everyone = self.known
        top = [c for c in sorted(self._members(island), key=rank) if c.correct and c.id != parent.id]
        chosen = top[: config.inspirations_top]
        parent_cell = cell_of(parent, config) if parent.correct else None
        diverse = [
            everyone[e]
            for e in self.population.elites()
            if e != parent.id and everyone[e] not in chosen and cell_of(everyone[e], config) != parent_cell
        ]
        rng.shuffle(diverse)
        return chosen + diverse[: config.inspirations_diverse]

    def _proposal(self, index: int) -> Proposal:
        context = self.context
        config = context.config.evolve
        island = index % config.islands
        rng = random.Random(f"{context.seed}/{index}")
        parent = self._parent(island, rng)
        key = f"g{index}"
        if parent is None:
            prompt = context.builder.build(
                context.problem, context.device, context.hardware, extras=context.extras()
            )
            return Proposal(key, 0, "first", island=island, prompt=prompt)
        extras = context.extras()
        inspirations = self._inspirations(island, parent, rng)
        if inspirations:
            extras.append(
                ("inspirations", {"inspirations": inspirations_block(inspirations, INSPIRATION_CHARS)})
            )
        partner = next((c for c in inspirations if c.correct), None)
        parents: tuple[int, ...] = (parent.id,)
        if partner is not None and parent.correct and rng.random() < config.crossover_rate:
            operator = "crossover"
            parents = (parent.id, partner.id)
            extras.append(
                ("crossover", {"other_source": partner.source or "", "other_summary": summary_line(partner)})
            )
        else:
            operator = "diff" if rng.random() < config.diff_rate else "rewrite"
            extras.append((operator, {}))
        prompt = context.builder.build(
            context.problem, context.device, context.hardware, parent=parent.as_parent(), extras=extras
        )
        round_number = index // max(1, context.config.n)
        return Proposal(key, round_number, operator, parents, island, prompt, parent_source=parent.source)

    def settled(self, proposal: Proposal, candidates: list[SearchCandidate]) -> list[Event]:
        self.waiting[self.order[proposal.key]] = (proposal, candidates)
        everything_asked = self.asked >= self.total and not self.sweeps
        self._take(self.made if everything_asked else self.made - self.lag)
        events, self.events = self.events, []
        return events

    def _take(self, upto: int) -> bool:
        """Take the verdicts of proposals 0 … upto-1 into the population, in the order the proposals were
        made; False while one of them is still unsettled."""
        while self.taken < upto and self.taken in self.waiting:
            self._take_one(*self.waiting.pop(self.taken))
            self.taken += 1
        return self.taken >= upto

    def _take_one(self, proposal: Proposal, candidates: list[SearchCandidate]) -> None:
        island = proposal.island if proposal.island is not None else 0
        for candidate in candidates:
            self.known[candidate.id] = candidate
            if candidate.source is not None and candidate.verdict is not None:
                self.population.add(candidate, island, self.known)
        if proposal.operator != "tunable":
            self.population.generations[island] += 1
            self._track_gain()
        top = best(list(self.known.values()))
        if top is not None and top.id not in self.swept:
            self.swept.add(top.id)
            self._sweep(top, island)
        if self.population.migration_due():
            moves = self.population.migrate(self.known)
            count = self.population.migrations
            self.events.append(Event(f"migration/{count}", "migration", {"migration": count, "moves": moves}))
        patience = self.context.config.patience * self.context.config.n
        if self.top is not None and self.since_gain >= patience:
            self.stop_reason = f"no gain beyond the timing noise in {self.since_gain} proposals"
        elif self.asked >= self.total and self.taken + 1 == self.made and not self.sweeps:
            self.stop_reason = f"all {self.total} proposals made"

    def _track_gain(self) -> None:
        top = best(list(self.known.values()))
        if top is None:
            return
        before = self.top
        threshold = (
            0.0
            if before is None
            else (before.speedup or 0.0) * (1 + max(self.context.config.noise, before.noise()))
        )
        if before is None or (top is not before and (top.speedup or 0.0) > threshold):
            self.top, self.since_gain = top, 0
        else:
            self.since_gain += 1

    def _sweep(self, top: SearchCandidate, island: int) -> None:
        """Queue variants of a new best's tunables."""
        trials = self.context.config.tunable_trials
        found = variants(top.source or "", trials) if trials and self.context.tunables else []
        if found:
            self.sweeps.append(
                Proposal(
                    f"t{top.id}",
                    top.round,
                    "tunable",
                    (top.id,),
                    island,
                    sources=tuple(source for source, _ in found),
                    meta={"values": [values for _, values in found]},
                )
            )

    def finished(self) -> str | None:
        return self.stop_reason

    def progress(self) -> str:
        return f"generation {self.asked} of {self.total}, {self.population.migrations} migrations"
