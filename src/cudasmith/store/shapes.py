"""What the run store's JSON columns hold, as typed dicts: written by the search, `ask` and `bench`, and read
back by them and by the store's readers. Keys a row of an older cudasmith lacks are absent (total=False
where a column holds several kinds of entry); a key a reader does not know is ignored.
"""

from __future__ import annotations

from typing import TypedDict

from cudasmith.jsontypes import JsonDict, JsonObject

# A value of an SQLite column, as the store writes and reads one (JSON columns hold text).
SqlValue = str | int | float | bytes | None


class StoredMessage(TypedDict):
    """One message of a request: its role (system, user, assistant) and text."""

    role: str
    content: str


class StoredRequest(TypedDict):
    """A request to a model as a call keeps it (the fields of `cudasmith.llm.Request`)."""

    messages: list[StoredMessage]
    n: int
    max_tokens: int
    temperature: float | None
    reasoning_effort: str | None
    thinking_budget: int | None


class ProposalMeta(TypedDict, total=False):
    """What a strategy attached to a proposal: the tunables' values of each variant it carries."""

    values: list[dict[str, int | float | str]]


class StoredProposal(TypedDict):
    """A strategy's proposal besides its prompt (`search.strategies.base.Proposal`): a `proposal` event's
    data, and a proposing call's meta."""

    key: str
    round: int
    operator: str
    parents: list[int]
    island: int | None
    model: str | None
    n: int
    sources: list[str]
    parent_source: str | None
    meta: ProposalMeta


class VerifyMeta(TypedDict):
    """A verifying call's meta: the candidate it reviews."""

    candidate: int


class CompletionFields(TypedDict, total=False):
    """An answer as a call stores it (the fields of `cudasmith.llm.Completion`; absent ones are NULL)."""

    text: str
    finish_reason: str
    model: str
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    latency_s: float
    # What the provider said besides (its own keys: reasoning tokens, a response id…).
    extra: JsonDict


class ParseInfo(TypedDict, total=False):
    """How the candidate's code was found in its answer (`search.parsing.ParsedAnswer`)."""

    kind: str
    reason: str
    notes: list[str]


class CandidateMeta(TypedDict, total=False):
    """What is known of a candidate besides its code."""

    # A model's answer: the model that wrote it; a tunable variant: its tunables' values.
    model: str
    tunables: dict[str, int | float | str]
    # ptxas's resources per kernel (search.resources.KernelResources), for `arch`; Nsight Compute's
    # metrics of a new best (harness.nsight.NcuProfile).
    ptxas: list[JsonObject]
    arch: str | None
    profile: JsonObject
    # A submission to `cudasmith serve`: its file's name, and whether it asked to be judged anew.
    name: str
    fresh: bool
    # A file of a bench (or a submission): its task, the problem file and its version, its sample, and what
    # another judge (KernelBench's eval_results.json) said of it.
    task: str
    problem_path: str
    task_version: str
    sample: int
    claimed_correct: bool | None
    claimed_speedup: float | None


class Opinion(TypedDict, total=False):
    """The LLM verifier's opinion of a candidate: pass, fail or unclear, why, and the verifier."""

    verdict: str
    reason: str
    model: str


class TaskEntry(TypedDict):
    """A task of a bench of a model: its name, its problem file and that file's version."""

    name: str
    path: str
    version: str


class RunOptions(TypedDict, total=False):
    """The options a run was started with, as the run's row keeps them (a resume reads them back)."""

    # The judge's options (harness.options.EvalOptions.stored()).
    judge: JsonDict
    # optimize, ask and a bench of a model: the search's settings (search.config.OptimizeConfig), budget.
    search: JsonDict
    budget_usd: float | None
    # A bench of a folder: the folder, its layout, KernelBench's checkout, and the files it did not judge.
    folder: str
    layout: str
    kernelbench: str | None
    unmatched: list[list[str]]
    # A run judged by a running `cudasmith serve`: its URL, and the judging options its requests set.
    server: str
    request: JsonDict
    # A bench of a model: its tasks (its search per task is `search`) and the seed the user fixed.
    tasks: list[TaskEntry]
    judge_seed: int | None
