"""Hidden configs: checked, never shown, and drawn anew for every session.

A problem declares them in HIDDEN_CONFIGS as dicts. A value may be a fixed one (the KernelBench way) or a
`range`, from which each judge session draws one value with its secret seed: a shape seen in one session
says nothing of the next, and no fixed hidden shape exists to be learnt from the problem file. What is
shown of them (`cudasmith show`, prompts) is how many there are.
"""

from __future__ import annotations

from dataclasses import replace

from cudasmith.tasks.inputs import derive_seed
from cudasmith.tasks.problem import Config, Problem


def draw_hidden(config: Config, secret: int, index: int) -> Config:
    """One hidden config as a session with `secret` judges it: each range replaced by one of its values."""
    return {
        key: value[derive_seed(secret, "hidden", index, key) % len(value)]
        if isinstance(value, range)
        else value
        for key, value in config.items()
    }


def for_session(problem: Problem, secret: int) -> Problem:
    """The problem with its hidden configs drawn for one session (unchanged where none has a range)."""
    drawn = tuple(draw_hidden(config, secret, index) for index, config in enumerate(problem.hidden_configs))
    return replace(problem, hidden_configs=drawn)


def is_drawn(config: Config) -> bool:
    """Whether a hidden config has a value drawn per session."""
    return any(isinstance(value, range) for value in config.values())


def hidden_summary(problem: Problem) -> str | None:
    """What may be said of a problem's hidden configs: how many, and whether their sizes change per session."""
    count = len(problem.hidden_configs)
    if not count:
        return None
    drawn = " (sizes drawn anew for every session)" if any(map(is_drawn, problem.hidden_configs)) else ""
    return f"{count} hidden config{'s' if count > 1 else ''}{drawn}, never shown"
