"""The evolutionary population: islands that evolve apart and pass their best along a ring, and a
MAP-Elites grid that keeps the best correct candidate of each kind (performance bucket × code size)."""

from __future__ import annotations

import bisect

from cudasmith.search.config import EvolveConfig
from cudasmith.search.strategies.base import SearchCandidate, rank

# Speedup edges of the performance feature where the device's speed of light is unknown.
SPEEDUP_BUCKETS = (0.5, 1.0, 2.0, 4.0)
Cell = tuple[str, int, int]


def cell_of(candidate: SearchCandidate, config: EvolveConfig) -> Cell:
    """The grid cell of a correct candidate: its % of speed of light bucket (its speedup bucket where
    the speed of light is unknown) and its code-size bucket."""
    lines = sum(1 for line in (candidate.source or "").splitlines() if line.strip())
    size = bisect.bisect(config.size_buckets, lines)
    sol = candidate.sol_pct()
    if sol is not None:
        return ("sol", bisect.bisect(config.sol_buckets, sol), size)
    return ("speedup", bisect.bisect(SPEEDUP_BUCKETS, candidate.speedup or 1.0), size)


class Population:
    """Island membership (candidate ids), the elite grid, and each island's generations since the
    last migration."""

    def __init__(self, config: EvolveConfig) -> None:
        self.config = config
        self.islands: list[list[int]] = [[] for _ in range(config.islands)]
        self.grid: dict[Cell, int] = {}
        self.generations = [0] * config.islands
        self.migrations = 0

    def add(self, candidate: SearchCandidate, island: int, everyone: dict[int, SearchCandidate]) -> None:
        """Take a judged candidate into an island (and the grid, when correct and the best of its cell)."""
        members = self.islands[island]
        if candidate.id not in members:
            members.append(candidate.id)
        if candidate.correct:
            cell = cell_of(candidate, self.config)
            holder = self.grid.get(cell)
            if holder is None or rank(candidate) < rank(everyone[holder]):
                self.grid[cell] = candidate.id
        if len(members) > self.config.population:
            elites = set(self.grid.values())
            removable = [m for m in members if m not in elites] or members
            members.remove(max(removable, key=lambda m: rank(everyone[m])))

    def elites(self) -> list[int]:
        """The grid's candidates."""
        return list(self.grid.values())

    def migration_due(self) -> bool:
        """Every island has lived `migration_interval` generations since the last migration."""
        return len(self.islands) > 1 and min(self.generations) >= self.config.migration_interval

    def migrate(self, everyone: dict[int, SearchCandidate]) -> list[dict[str, int]]:
        """Copy each island's best (`migration_rate` of its members, at least one) to the next island of
        the ring; returns the moves."""
        moves = []
        chosen = []
        for index, members in enumerate(self.islands):
            count = max(1, int(len(members) * self.config.migration_rate))
            chosen.append((index, sorted(members, key=lambda m: rank(everyone[m]))[:count]))
        for index, best in chosen:
            target = (index + 1) % len(self.islands)
            for member in best:
                if member not in self.islands[target]:
                    self.add(everyone[member], target, everyone)
                    moves.append({"candidate": member, "from": index, "to": target})
        self.generations = [0] * len(self.islands)
        self.migrations += 1
        return moves
