"""What one run of the search is made of (`Search`) and what it reports while running (`Snapshot`) and
at its end (`Outcome`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cudasmith.errors import LLMError
from cudasmith.exec import Executor, ExecutorStats
from cudasmith.harness.options import EvalOptions
from cudasmith.llm import Budget, LLMClient, LLMConfig
from cudasmith.search.ensemble import Ensemble
from cudasmith.search.strategies.base import SearchCandidate, SearchContext, Strategy
from cudasmith.store import CacheKey, Run, RunStore


@dataclass
class Search:
    """Everything one run of the driver needs (`cudasmith.search.optimize` makes it)."""

    store: RunStore
    run: Run
    strategy: Strategy
    context: SearchContext
    clients: dict[str, LLMClient]
    budget: Budget
    ensemble: Ensemble
    llm_config: LLMConfig
    executor: Executor
    options: EvalOptions
    cache_key: CacheKey
    run_dir: Path
    verifier: str | None = None
    on_change: Callable[[Snapshot], None] | None = None
    # Refuse candidates that repeat earlier ones before judging them.
    novelty: bool = True


@dataclass
class Snapshot:
    """Where a run stands, for the live display."""

    progress: str
    judged: int
    queued: int
    judging: int
    calls_in_flight: int
    best: SearchCandidate | None
    spent_usd: float
    latency_s: float | None
    idle_s: float
    executor: ExecutorStats | None = None


@dataclass
class Outcome:
    """How the driver's work ended: why it stopped, how long the judge waited for answers, what failed."""

    stop_reason: str
    judge_idle_waiting_s: float = 0.0
    errors: list[str] = field(default_factory=list)
    failures: list[LLMError] = field(default_factory=list)
