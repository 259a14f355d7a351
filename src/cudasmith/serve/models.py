"""The bodies of `cudasmith serve`'s HTTP API as pydantic models: FastAPI checks every request against them
(a missing, unknown or mistyped field is a 422 before anything is stored) and draws the OpenAPI page from
them. The service (service.py) takes and gives these same types."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from cudasmith.harness.options import RULES, EvalOptions
from cudasmith.serve.protocol import MAX_BATCH, State
from cudasmith.timing.protocol import L2_STATES


class Strict(BaseModel):
    """A request body: a field it does not know is an error, never silently ignored."""

    model_config = ConfigDict(extra="forbid")


class JudgingOptions(Strict):
    """The judging options a request may set, named as `cudasmith eval`'s flags; unset ones are the
    server's (its command line, else the protocol's defaults). The device, the candidates in flight, the
    memory limit and isolation are the server's alone."""

    seeds: int | None = Field(
        default=None, ge=1, le=64, description="Input sets checked per config (--seeds)."
    )
    timing: bool | None = Field(default=None, description="Time correct candidates (--timing/--no-timing).")
    time_limit: float | None = Field(
        default=None, gt=0, description="Seconds one call of forward may take (--time-limit)."
    )
    load_time_limit: float | None = Field(
        default=None,
        gt=0,
        description="Seconds the import and kernel compilation may take (--load-time-limit).",
    )
    first_call_extra: float | None = Field(
        default=None, ge=0, description="Seconds added to the first call's limit (--first-call-extra)."
    )
    config_time_limit: float | None = Field(
        default=None,
        gt=0,
        description="Seconds the check of one config may be estimated to take; a larger config is too large "
        "for the device (--config-time-limit).",
    )
    rules: Literal[RULES] | None = Field(default=None, description="strict or kernelbench (--rules).")  # type: ignore[valid-type]
    baselines: list[str] | None = Field(
        default=None,
        description="Timed beside eager PyTorch: compile, compile-max-autotune, expert (--baselines).",
    )
    l2: Literal[L2_STATES] | None = Field(default=None, description="L2 while timing: cold or hot (--l2).")  # type: ignore[valid-type]
    graph: bool | None = Field(default=None, description="Time CUDA-graph replays (--graph).")

    def applied(self, base: EvalOptions) -> EvalOptions:
        """`base` with the options this request sets, checked (a UsageError says what is wrong)."""
        from cudasmith.harness.baselines import parse_baselines

        values: dict[str, Any] = {
            "seeds_per_config": self.seeds,
            "timing": self.timing,
            "call_timeout_s": self.time_limit,
            "load_timeout_s": self.load_time_limit,
            "first_call_extra_s": self.first_call_extra,
            "config_time_limit_s": self.config_time_limit,
            "rules": self.rules,
            "l2_state": self.l2,
            "graph": self.graph,
        }
        if self.baselines is not None:
            values["baselines"] = parse_baselines(",".join(self.baselines))
        options = replace(base, **{name: value for name, value in values.items() if value is not None})
        options.validate()
        return options


class CandidateIn(Strict):
    """One candidate: a solution's source, and the problem it solves (a built-in task's name, or a problem
    file's source: exactly one)."""

    source: str = Field(description="The solution file's text (defines ModelNew).")
    task: str | None = Field(default=None, description="A built-in task's name, e.g. level1/softmax.")
    problem: str | None = Field(default=None, description="A problem file's source, instead of a task.")
    options: JudgingOptions = Field(default_factory=JudgingOptions)
    fresh: bool = Field(
        default=False, description="Judge it again even when the same code, task and options have a verdict."
    )
    name: str | None = Field(default=None, max_length=200, description="What the verdict calls the solution.")


class Batch(Strict):
    """Several candidates in one request; ids come back in the same order."""

    candidates: list[CandidateIn] = Field(min_length=1, max_length=MAX_BATCH)


def _shape(body: Any) -> str:
    """Which shape a POST body has: a batch holds "candidates", anything else is one candidate (so that its
    errors are those of the one shape meant, not of both)."""
    return "batch" if isinstance(body, dict) and "candidates" in body else "candidate"


# The body of POST /v1/verdicts: one candidate, or a batch.
Submission = Annotated[
    Annotated[CandidateIn, Tag("candidate")] | Annotated[Batch, Tag("batch")], Discriminator(_shape)
]


class Accepted(BaseModel):
    """The submissions' ids, in the order given: each was stored before this answer was sent."""

    ids: list[int]


class Served(BaseModel):
    """A submission as the server has it: its state, and once done its verdict (the JSON of `cudasmith
    eval --json`) with its reward (`cudasmith.reward`, as `export` writes it)."""

    id: int
    state: State
    task: str
    cached: bool = Field(
        default=False, description="The verdict was reused from an earlier identical submission."
    )
    verdict: dict[str, Any] | None = None
    reward: float | None = None
    error: str | None = Field(default=None, description="Why a failed submission has no verdict.")


class Health(BaseModel):
    """The server is up: its version, device, judge, executor and lanes, and the judging options a request
    overrides (what a client that keeps verdicts needs to key them as the server does)."""

    status: Literal["ok"] = "ok"
    version: str
    device: str
    device_name: str = Field(description="The device as verdicts name it.")
    judge: str = Field(description="The judge's version: a changed judge gives fresh verdicts.")
    judging: dict[str, Any] = Field(
        description="The server's judging options (its command line, else the protocol's), the secret seed aside."
    )
    executor: str
    lanes: list[str]
    uptime_s: float


class Metrics(BaseModel):
    """The queue and the lanes now."""

    queue_depth: int = Field(description="Submissions waiting for a lane or for an identical one's verdict.")
    in_flight: int = Field(description="Candidates being judged now, over all lanes.")
    verdicts_per_minute: float = Field(description="Submissions finished in the last minute.")
    gpu_busy: dict[str, float] = Field(
        description="Per GPU, NVML's utilization since the first candidate (where pynvml is installed)."
    )
    lanes_busy: float | None = Field(description="The lanes' mean share of the time spent judging.")
    submitted: int
    judged: int
    reused: int = Field(description="Submissions given a stored verdict instead of being judged.")
    failed: int
    sessions_closed_idle: int
    uptime_s: float
