"""Between the run store's rows and the search's objects: requests, prompts, candidates and verdicts."""

from __future__ import annotations

from cudasmith.harness.nsight import NcuProfile
from cudasmith.harness.verdict import Verdict
from cudasmith.harness.wire.status import Rule, Status
from cudasmith.llm import Message, Request
from cudasmith.search.prompts import Prompt
from cudasmith.search.resources import KernelResources, describe_resources
from cudasmith.search.strategies.base import SearchCandidate
from cudasmith.store import CandidateRecord
from cudasmith.store.shapes import CandidateMeta, StoredMessage, StoredRequest
from cudasmith.tasks.problem import Problem

# An answer in which no solution was found is judged like source that does not compile.
NO_SOLUTION_STATUS = Status.COMPILE_ERROR


def request_to_dict(request: Request) -> StoredRequest:
    """A request as the store keeps it."""
    return StoredRequest(
        messages=[StoredMessage(role=m.role, content=m.content) for m in request.messages],
        n=request.n,
        max_tokens=request.max_tokens,
        temperature=request.temperature,
        reasoning_effort=request.reasoning_effort,
        thinking_budget=request.thinking_budget,
    )


def request_from_dict(data: StoredRequest) -> Request:
    """A stored request, to send again."""
    return Request(
        messages=tuple(Message(m["role"], m["content"]) for m in data["messages"]),
        n=data["n"],
        max_tokens=data["max_tokens"],
        temperature=data["temperature"],
        reasoning_effort=data["reasoning_effort"],
        thinking_budget=data["thinking_budget"],
    )


def prompt_from_request(data: StoredRequest) -> Prompt:
    """The system and user messages of a stored request."""
    by_role = {m["role"]: m["content"] for m in data.get("messages", [])}
    return Prompt(by_role.get("system", ""), by_role.get("user", ""))


def facts_from_meta(meta: CandidateMeta) -> tuple[str, ...]:
    """The hardware's facts about a candidate (ptxas, Nsight Compute) as prompt lines."""
    facts = []
    if ptxas := meta.get("ptxas"):
        facts.append(describe_resources([KernelResources(**k) for k in ptxas], meta.get("arch") or ""))
    if profile := meta.get("profile"):
        facts.append(NcuProfile(**profile).describe())
    return tuple(facts)


def candidate_from_record(record: CandidateRecord) -> SearchCandidate:
    """A stored candidate as a strategy sees it."""
    return SearchCandidate(
        id=record.id,
        proposal=record.key.rsplit("/", 1)[0],
        round=record.round,
        operator=record.operator or "",
        parents=tuple(record.parents),
        island=record.island,
        source=record.source,
        model=record.meta.get("model"),
        verdict=record.verdict,
        skipped=record.skipped,
        facts=facts_from_meta(record.meta),
        meta=record.meta,
    )


def no_solution_verdict(problem: Problem, device_name: str, reason: str, notes: list[str]) -> Verdict:
    """The verdict on an answer in which no solution file was found."""
    return Verdict(
        status=NO_SOLUTION_STATUS,
        reason=f"no solution in the answer: {reason}",
        rule=Rule.DOES_NOT_BUILD,
        task=problem.name,
        solution="",
        device=device_name,
        dtype=problem.dtype,
        notes=list(notes),
    )
