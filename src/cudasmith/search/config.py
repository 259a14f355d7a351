"""Search settings: one validated object, read from the `[optimize]` table of cudasmith.toml; and
SearchSettings, everything a search is told (those settings, the judge's options, its lanes, the models'
providers, a budget).

[optimize]
strategy = "evolve"          # or "fsr"
n = 4                        # candidates per round
depth = 5                    # rounds
verifier = "openai:gpt-5-mini"
[optimize.evolve]
islands = 5
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from cudasmith.exec import Lanes
from cudasmith.harness.options import EvalOptions
from cudasmith.llm.config import LLMConfig, StrictSettings, load_settings
from cudasmith.search.novelty import NEAR_DUPLICATE_RATIO
from cudasmith.timing.protocol import SCREEN_MARGIN

# CUDA-LLM's FSR: N candidates per round, D rounds; we stop earlier after PATIENCE rounds without a gain
# larger than the timing noise (NOISE, or the best time's own 95 % interval where that is wider).
CANDIDATES_PER_ROUND = 4
ROUNDS = 5
PATIENCE = 2
NOISE = 0.02
# Model calls in flight at once, and candidates waiting for the judge before no new call is made, per
# lane of the judge (one per GPU): enough to keep every lane busy, few enough that proposals are built
# from recent verdicts.
MAX_IN_FLIGHT = 4
MAX_QUEUED = 2


class FSRConfig(StrictSettings):
    """Feature Search and Reinforcement (CUDA-LLM)."""

    failures_shown: int = Field(4, ge=0, description="Distinct failures of the last round put in the prompt.")
    feedback_chars: int = Field(4000, ge=200, description="Characters of failure feedback at most.")


class EvolveConfig(StrictSettings):
    """Islands and a MAP-Elites grid (OpenEvolve's defaults for islands and migration)."""

    islands: int = Field(5, ge=1)
    migration_interval: int = Field(50, ge=1, description="Generations of every island between migrations.")
    migration_rate: float = Field(0.1, gt=0, le=1, description="Share of an island's best sent to the next.")
    population: int = Field(40, ge=2, description="Members kept per island.")
    exploitation: float = Field(0.7, ge=0, le=1, description="Parents drawn from the elites.")
    exploration: float = Field(0.2, ge=0, le=1, description="Parents drawn at random from the island.")
    inspirations_top: int = Field(2, ge=0)
    inspirations_diverse: int = Field(1, ge=0)
    diff_rate: float = Field(0.6, ge=0, le=1, description="Mutations asked as SEARCH/REPLACE edits.")
    crossover_rate: float = Field(0.1, ge=0, le=1)
    sol_buckets: tuple[float, ...] = Field((5, 15, 30, 50, 75), description="% of speed of light edges.")
    size_buckets: tuple[int, ...] = Field((60, 120, 240), description="Lines of code edges.")
    view_lag: int | None = Field(
        None,
        ge=0,
        description="Proposals a new one may not see the verdicts of (the newest ones); none: as many as "
        "the driver keeps in the air at once, so the judge never waits for it.",
    )

    @model_validator(mode="after")
    def _ratios(self) -> EvolveConfig:
        if self.exploitation + self.exploration > 1:
            raise ValueError("exploitation + exploration must be at most 1 (the rest is random)")
        return self


class OptimizeConfig(StrictSettings):
    """Everything a search needs besides the models and the judge's options."""

    strategy: Literal["fsr", "evolve", "one-shot"] = "fsr"
    n: int = Field(CANDIDATES_PER_ROUND, ge=1)
    depth: int = Field(ROUNDS, ge=1)
    patience: int = Field(PATIENCE, ge=1)
    noise: float = Field(NOISE, ge=0)
    max_in_flight: int = Field(MAX_IN_FLIGHT, ge=1)
    max_queued: int = Field(MAX_QUEUED, ge=1)
    weights: tuple[float, ...] = Field((), description="One weight per model (default: equal).")
    cost_sensitivity: float = Field(0.5, ge=0, description="How strongly a costlier model is picked less.")
    tunable_trials: int = Field(4, ge=0, description="Variants of a candidate's tunables judged per sweep.")
    novelty_threshold: float = Field(NEAR_DUPLICATE_RATIO, gt=0, le=1)
    verifier: str | None = None
    profile: bool = Field(
        True, description="Nsight Compute metrics of each new best, where ncu is available."
    )
    confirm_all: bool = Field(
        False,
        description="Time every correct candidate by the full protocol, without the screen first "
        "(harness/confirm.py).",
    )
    confirm_margin: float = Field(
        SCREEN_MARGIN,
        gt=0,
        le=1,
        description="How much slower than the run's best (or the baseline) a screened candidate may look "
        "and still be confirmed, beyond its screen's own spread.",
    )
    fsr: FSRConfig = FSRConfig()
    evolve: EvolveConfig = EvolveConfig()


def load_optimize_config(explicit: str | Path | None = None, **overrides: Any) -> OptimizeConfig:
    """The `[optimize]` settings, validated; keyword overrides (not None) win over the file."""
    return load_settings(OptimizeConfig, "optimize", explicit, overrides)


@dataclass(frozen=True)
class SearchSettings:
    """Everything a search is told besides its task and models: the search's settings (None: the
    `[optimize]` table), the judge's options (its device among them), where candidates are judged, the
    model providers (None: the `[llm]` table), a budget over the run (None: the `[llm]` table's), the
    prompt templates, and where run folders go (None: beside the store)."""

    search: OptimizeConfig | None = None
    judge: EvalOptions = field(default_factory=EvalOptions)
    lanes: Lanes = field(default_factory=Lanes)
    llm: LLMConfig | None = None
    budget_usd: float | None = None
    templates: str | Path | None = None
    run_root: str | Path | None = None
