"""A weighted, cost-aware ensemble of models: which model answers the next proposal.

A model is picked with probability proportional to

    weight × (correct + 1) / (answers + 2) ÷ relative_cost ^ cost_sensitivity

where the middle term is its smoothed rate of correct candidates so far and relative_cost its mean
cost per answer over the geometric mean of all priced models' (1 while unknown). So a cheap model gets
breadth, and a strong one keeps its share while it earns it.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass


@dataclass
class ModelRecord:
    """What one model did in this run."""

    answers: int = 0
    correct: int = 0
    priced_answers: int = 0
    cost_usd: float = 0.0

    def mean_cost(self) -> float | None:
        return self.cost_usd / self.priced_answers if self.priced_answers else None


class Ensemble:
    """Models with weights; `pick` draws one, `record_*` keep the counts it draws by (of its own models)."""

    def __init__(
        self, models: list[str], weights: tuple[float, ...] = (), cost_sensitivity: float = 0.5
    ) -> None:
        if weights and len(weights) != len(models):
            raise ValueError(f"{len(weights)} weights for {len(models)} models")
        self.weights = dict(zip(models, weights or [1.0] * len(models), strict=True))
        self.cost_sensitivity = cost_sensitivity
        self.records = {model: ModelRecord() for model in models}

    def probabilities(self) -> dict[str, float]:
        """Each model's chance of answering the next proposal."""
        costs = [c for r in self.records.values() if (c := r.mean_cost()) is not None and c > 0]
        typical = math.exp(sum(math.log(c) for c in costs) / len(costs)) if costs else None
        scores = {}
        for model, record in self.records.items():
            mean = record.mean_cost()
            relative = mean / typical if typical and mean else 1.0
            success = (record.correct + 1) / (record.answers + 2)
            scores[model] = self.weights[model] * success / relative**self.cost_sensitivity
        total = sum(scores.values()) or 1.0
        return {model: score / total for model, score in scores.items()}

    def pick(self, rng: random.Random) -> str:
        """A model, drawn by the probabilities above."""
        chances = self.probabilities()
        return rng.choices(list(chances), weights=list(chances.values()))[0]

    def record_answer(self, model: str, cost_usd: float | None) -> None:
        """Count one answer of a model and what it cost (None: unknown, left out of its mean)."""
        record = self.records.get(model)
        if record is None:
            return
        record.answers += 1
        if cost_usd is not None:
            record.priced_answers += 1
            record.cost_usd += cost_usd

    def record_verdict(self, model: str, correct: bool) -> None:
        """Count a judged candidate of a model."""
        if correct and model in self.records:
            self.records[model].correct += 1
