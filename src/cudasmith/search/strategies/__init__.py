"""Search strategies behind one interface (`base.Strategy`): `fsr`, `evolve`, and `one-shot`."""

from __future__ import annotations

from cudasmith.search.strategies.base import SearchContext, Strategy, best
from cudasmith.search.strategies.evolve import Evolve
from cudasmith.search.strategies.fsr import FSR
from cudasmith.search.strategies.oneshot import OneShot

STRATEGIES: dict[str, type[Strategy]] = {"fsr": FSR, "evolve": Evolve, "one-shot": OneShot}

__all__ = [
    "FSR",
    "STRATEGIES",
    "Evolve",
    "OneShot",
    "SearchContext",
    "Strategy",
    "best",
]
