"""The rows of the run store as typed records (JSON columns decoded)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import astuple, dataclass, field
from typing import Any, Protocol

from cudasmith.harness.verdict import Verdict
from cudasmith.jsontypes import JsonDict, JsonObject
from cudasmith.store.integrity import TAMPERED, masked_seed, split_joined, stored_verdict
from cudasmith.store.shapes import (
    CandidateMeta,
    CompletionFields,
    Opinion,
    ParseInfo,
    RunOptions,
    StoredProposal,
    StoredRequest,
    VerifyMeta,
)
from cudasmith.tasks.problem import Config


def code_hash(source: str) -> str:
    """The identity of a candidate's code for the evaluation cache: a hash of the exact file."""
    return hashlib.sha256(source.encode()).hexdigest()[:32]


def _json(value: str | None, default: Any = None) -> Any:
    return default if value is None else json.loads(value)


@dataclass(frozen=True)
class CacheKey:
    """What a verdict depends on besides the code: the task's source, the device, the judge's code and
    the judging options that change verdicts (seeds per config, timing, baselines…)."""

    task_version: str
    device_name: str
    harness_version: str
    judge_options: str


@dataclass
class Run:
    """One run: an optimize search, an `ask`, or a bench over a folder of solutions (no model)."""

    kind: str
    task: str
    task_version: str
    device: str
    device_name: str
    harness_version: str
    problem_path: str | None = None
    strategy: str | None = None
    models: list[str] = field(default_factory=list)
    options: RunOptions = field(default_factory=lambda: RunOptions())
    versions: dict[str, str | None] = field(default_factory=dict)
    secret_seed: int | None = None
    directory: str | None = None
    id: str = ""
    status: str = "running"
    stop_reason: str | None = None
    # The RunSummary's JSON (store.summary), once the run ends.
    summary: JsonObject | None = None
    created_at: str = ""
    updated_at: str = ""

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Run:
        data = dict(row)
        if data.pop("seed_masked", 0):
            data["secret_seed"] = masked_seed(data["secret_seed"], data["id"])
        for name, default in (("models", []), ("options", {}), ("versions", {}), ("summary", None)):
            data[name] = _json(data[name], default)
        return cls(**data)


@dataclass
class CompletionRecord:
    """One answer of a model to a call."""

    id: int
    call_id: int
    index: int
    text: str
    finish_reason: str | None
    model: str | None
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    latency_s: float | None
    extra: JsonDict

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> CompletionRecord:
        data = dict(row)
        data["index"] = data.pop("idx")
        data["extra"] = _json(data["extra"], {})
        return cls(**data)

    def completion_dict(self) -> CompletionFields:
        """The fields of `cudasmith.llm.Completion`."""
        return {
            "text": self.text,
            "finish_reason": self.finish_reason or "stop",
            "model": self.model or "",
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "latency_s": self.latency_s or 0.0,
            "extra": self.extra,
        }


class Answer(Protocol):
    """What a tally reads of a model's answer (an llm Completion, or a CompletionRecord)."""

    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None


@dataclass
class Usage:
    """What a model's calls used: answers, tokens, and the dollars of the answers whose price is known.
    The one tally of a client's spend (cudasmith.llm) and of a stored run's, per model (store.runs)."""

    calls: int = 0
    completions: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_completions: int = 0

    def add(self, completion: Answer) -> None:
        """Count one answer."""
        self.completions += 1
        self.input_tokens += completion.input_tokens or 0
        self.output_tokens += completion.output_tokens or 0
        if completion.cost_usd is None:
            self.unpriced_completions += 1
        else:
            self.cost_usd += completion.cost_usd

    @property
    def usd(self) -> float | None:
        """What the calls cost; None while any answer's price is unknown (never counted as 0)."""
        return self.cost_usd if not self.unpriced_completions else None

    def __add__(self, other: Usage) -> Usage:
        """Two tallies as one: `sum(by_model.values(), Usage())` is a run's."""
        return Usage(*(mine + theirs for mine, theirs in zip(astuple(self), astuple(other), strict=True)))

    def to_dict(self) -> dict[str, int | float | None]:
        """The JSON form, as a run's summary writes it ("answers" are completions; `usd` is None while
        any answer's price is unknown, `known_usd` the sum of the known ones)."""
        return {
            "calls": self.calls,
            "answers": self.completions,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "known_usd": self.cost_usd,
            "unpriced_answers": self.unpriced_completions,
            "usd": self.usd,
        }


@dataclass
class CallRecord:
    """One request to a model (`purpose`: propose or verify), stored before it is sent.

    `request` holds the messages and sampling settings; `meta` what the strategy meant by it (round,
    island, operator, parent ids). A call is `pending` until its answers are stored (`done`) or it
    failed for good (`failed`, with `error`)."""

    id: int
    run_id: str
    key: str
    purpose: str
    model: str
    request: StoredRequest
    meta: StoredProposal | VerifyMeta
    status: str
    error: str | None
    started_at: str
    finished_at: str | None
    completions: list[CompletionRecord] = field(default_factory=list)

    @classmethod
    def from_row(cls, row: sqlite3.Row, completions: list[CompletionRecord]) -> CallRecord:
        data = dict(row)
        data["request"] = _json(data["request"], {})
        data["meta"] = _json(data["meta"], {})
        return cls(**data, completions=completions)


@dataclass
class CandidateRecord:
    """One candidate solution and, once judged, its verdict.

    `parents` are candidate ids (the first is the one its prompt refined); `completion_id` links the
    answer it was parsed from (None for tunable variants and bench files); `skipped` says why it was
    never judged; `observed` is the order in which the search took in its verdict. A candidate whose
    verdict row fails its MAC has a `verdict_id` but no `verdict` (it is `tampered`)."""

    id: int
    run_id: str
    key: str
    round: int
    island: int | None
    origin: str
    operator: str | None
    parents: list[int]
    completion_id: int | None
    source: str | None
    code_hash: str | None
    path: str | None
    parse: ParseInfo
    meta: CandidateMeta
    verifier: Opinion | None
    skipped: str | None
    verdict_id: int | None
    verdict_cached: bool
    observed: int | None
    created_at: str
    verdict: Verdict | None = None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> CandidateRecord:
        data = dict(row)
        columns, mac = split_joined(data)
        verdict = None if columns is None else stored_verdict(columns, mac)
        for name, default in (("parents", []), ("parse", {}), ("meta", {}), ("verifier", None)):
            data[name] = _json(data[name], default)
        data["verdict_cached"] = bool(data["verdict_cached"])
        return cls(**data, verdict=verdict)

    @property
    def tampered(self) -> bool:
        """Whether its verdict row fails its MAC (its content is not shown, nor reused)."""
        return self.verdict_id is not None and self.verdict is None

    @property
    def status(self) -> str | None:
        """The verdict's status, TAMPERED for a row that fails its MAC; None while unjudged."""
        if self.verdict is not None:
            return self.verdict.status.value
        return TAMPERED if self.tampered else None


@dataclass
class VerdictRecord:
    """One run of the judge: the full verdict (None for a row that fails its MAC), keyed for the
    evaluation cache."""

    id: int
    code_hash: str | None
    status: str
    speedup: float | None
    verdict: Verdict | None
    wall_s: float | None
    run_id: str | None
    created_at: str

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> VerdictRecord:
        data = {k: row[k] for k in ("id", "code_hash", "speedup", "wall_s", "run_id", "created_at")}
        verdict = stored_verdict(dict(row), row["mac"])
        status = TAMPERED if verdict is None else verdict.status.value
        return cls(**data, status=status, verdict=verdict)

    @property
    def tampered(self) -> bool:
        """Whether the row fails its MAC (its content is not shown, nor reused)."""
        return self.status == TAMPERED


@dataclass
class Turn:
    """One step of a candidate's multi-turn chain: the prompt sent, the answer, the code taken from it and
    the judge's verdict (what the next prompt in the chain was built from)."""

    candidate_id: int
    messages: list[dict[str, str]]
    response: str | None
    source: str | None
    verdict: Verdict | None
    # The verdict's status (TAMPERED for a row that fails its MAC); None while unjudged.
    status: str | None
    operator: str | None
    parents: list[int]


@dataclass
class BaselineTime:
    """A baseline's time on one config, as a verdict measured it (the `baselines` table)."""

    id: int
    verdict_id: int
    task_version: str
    device_name: str
    config_index: int
    config: Config | str
    name: str
    time_ms: float
    ci95_ms: list[float] | None
    sol_pct: float | None
    measured_at: str | None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> BaselineTime:
        data = dict(row)
        data["config"] = _json(data["config"])
        data["ci95_ms"] = _json(data["ci95_ms"])
        return cls(**data)


@dataclass
class EventRecord:
    """Something the search did, once per key: its kind (proposal, settled, round, migration, task-run…)
    and its data, whose shape is the kind's."""

    id: int
    run_id: str
    key: str
    kind: str
    data: JsonObject
    created_at: str

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> EventRecord:
        data = dict(row)
        data["data"] = _json(data["data"], {})
        return cls(**data)
