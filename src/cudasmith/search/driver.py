"""The asynchronous search driver: model calls stay in flight while the judge works, so the judge never
waits for an answer when there is work, and no more calls are made than it can keep up with.

A strategy proposes; the driver stores each proposal and call before it is sent, parses the answers
into candidates, drops duplicates before the judge (novelty), reuses cached verdicts, asks the optional
verifier (which only orders the judge's queue), judges one candidate at a time on a thread, adds the
hardware's facts (ptxas; Nsight Compute for each new best) and tells the strategy when all candidates
of a proposal are settled. Everything is in the run store as it happens, so a run killed at any point
resumes (`restore`) with no stored answer asked for again and no stored verdict judged again.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from cudasmith.errors import BudgetExhausted, LLMError
from cudasmith.llm import Budget, LLMClient, LLMConfig, request_for
from cudasmith.search.convert import (
    candidate_from_record,
    no_solution_verdict,
    prompt_from_request,
    request_from_dict,
    request_to_dict,
)
from cudasmith.search.ensemble import Ensemble
from cudasmith.search.judge import JudgeSession
from cudasmith.search.novelty import NoveltyFilter
from cudasmith.search.parsing import parse_answer
from cudasmith.search.resources import describe_resources, ptxas_resources
from cudasmith.search.strategies.base import Candidate, Proposal, SearchContext, Strategy, best, rank
from cudasmith.search.verifier import PRIORITY, parse_opinion, verifier_prompt
from cudasmith.store import CacheKey, CallRecord, CandidateRecord, Run, RunStore, code_hash

# After this many calls in a row failed for good (retries spent), the run stops: the model is down.
MAX_FAILED_CALLS_IN_A_ROW = 3


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
    judge: JudgeSession
    cache_key: CacheKey
    run_dir: Path
    verifier: str | None = None
    on_change: Callable[[Snapshot], None] | None = None


@dataclass
class Snapshot:
    """Where a run stands, for the live display."""

    progress: str
    judged: int
    queued: int
    judging: bool
    calls_in_flight: int
    best: Candidate | None
    spent_usd: float
    latency_s: float | None
    idle_s: float


@dataclass
class Outcome:
    """How the driver's work ended: why it stopped, and where the judge's time went."""

    stop_reason: str
    judge_busy_s: float = 0.0
    judge_idle_waiting_s: float = 0.0
    errors: list[str] = field(default_factory=list)


class Driver:
    """Runs one search to its end (or its budget's)."""

    def __init__(self, search: Search) -> None:
        self.s = search
        self.tasks: dict[asyncio.Task[None], str] = {}
        self.queue: list[int] = []
        self.waiting_for_judge: dict[int, Candidate] = {}
        self.proposals: dict[str, Proposal] = {}
        self.members: dict[str, list[int]] = {}
        self.unsettled: dict[str, set[int]] = {}
        self.settled: set[str] = set()
        self.opinions: dict[int, str] = {}
        self.novelty = NoveltyFilter(search.context.config.novelty_threshold)
        self.rng = random.Random(f"{search.context.seed}/models")
        self.observed = 0
        self.failed_in_a_row = 0
        self.stop_reason: str | None = None
        self.outcome = Outcome(stop_reason="")
        self.latencies: list[float] = []
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="cudasmith-judge")

    async def run(self) -> Outcome:
        """Search until the strategy is finished, the budget is spent or the model keeps failing."""
        self.restore()
        try:
            while True:
                self._fill()
                self._judge_next()
                if not self.tasks:
                    break
                waiting = self._judge_waits_for_answers()
                started = time.monotonic()
                done, _ = await asyncio.wait(set(self.tasks), return_when=asyncio.FIRST_COMPLETED)
                if waiting:
                    self.outcome.judge_idle_waiting_s += time.monotonic() - started
                for task in done:
                    self.tasks.pop(task)
                    task.result()
                self._notify()
        finally:
            for task in self.tasks:
                task.cancel()
            self.pool.shutdown(wait=False, cancel_futures=True)
        self.outcome.stop_reason = self.stop_reason or self.s.strategy.finished() or "nothing left to propose"
        return self.outcome

    def _spawn(self, work: Coroutine[Any, Any, None], kind: str) -> None:
        self.tasks[asyncio.ensure_future(work)] = kind

    def _calls_in_flight(self) -> int:
        return sum(kind == "propose" for kind in self.tasks.values())

    def _judge_waits_for_answers(self) -> bool:
        """The judge has nothing to do while model calls that will give it work are in flight."""
        judging = "judge" in self.tasks.values()
        return not judging and not self.queue and self._calls_in_flight() > 0

    # Proposals and model calls.

    def _fill(self) -> None:
        if self.stop_reason is None and (reason := self.s.strategy.finished()):
            self.stop_reason = reason
        config = self.s.context.config
        room = config.max_in_flight - self._calls_in_flight()
        if self.stop_reason is not None or room <= 0 or len(self.queue) >= config.max_queued:
            return
        try:
            self.s.budget.check()
        except BudgetExhausted as exc:
            self.stop_reason = str(exc)
            return
        for proposal in self.s.strategy.propose(room):
            self._start(proposal)

    def _start(self, proposal: Proposal) -> None:
        if proposal.prompt is not None and proposal.model is None:
            proposal = replace(proposal, model=self.s.ensemble.pick(self.rng))
        self.s.store.add_event(self.s.run.id, f"proposal/{proposal.key}", "proposal", proposal.to_dict())
        self.proposals[proposal.key] = proposal
        self.s.strategy.proposed(proposal)
        if proposal.prompt is None:
            self._admit_all(proposal, self._variants(proposal), near=False)
            return
        assert proposal.model is not None
        request = request_for(proposal.prompt.messages(), proposal.n, self.s.llm_config)
        call = self.s.store.start_call(
            self.s.run.id,
            proposal.key,
            "propose",
            proposal.model,
            request_to_dict(request),
            proposal.to_dict(),
        )
        self._spawn(self._ask(proposal, call), "propose")

    def _variants(self, proposal: Proposal) -> list[CandidateRecord]:
        """The candidates a proposal brought without a model (tunable variants)."""
        values = proposal.meta.get("values", [])
        return [
            self.s.store.add_candidate(
                self.s.run.id,
                f"{proposal.key}/{index}",
                "tunable",
                round=proposal.round,
                island=proposal.island,
                operator=proposal.operator,
                parents=list(proposal.parents),
                source=source,
                code_hash=code_hash(source),
                meta={"tunables": values[index] if index < len(values) else {}},
            )
            for index, source in enumerate(proposal.sources)
        ]

    async def _complete(self, call: CallRecord) -> CallRecord | None:
        """The call's answers: stored ones, else asked for now and stored; None when it failed for good."""
        if call.status == "done":
            return call
        client = self.s.clients[call.model]
        try:
            response = await client.complete(request_from_dict(call.request))
        except LLMError as exc:
            self.s.store.finish_call(call.id, [], str(exc))
            self.outcome.errors.append(str(exc))
            if isinstance(exc, BudgetExhausted):
                self.stop_reason = str(exc)
            return None
        self.s.store.finish_call(
            call.id, [c.to_dict() for c in response.completions], "; ".join(response.errors) or None
        )
        self.outcome.errors += response.errors
        for completion in response.completions:
            self.latencies.append(completion.latency_s)
            if call.purpose == "propose":
                self.s.ensemble.record_answer(call.model, completion.cost_usd)
        return self.s.store.call(self.s.run.id, call.key)

    async def _ask(self, proposal: Proposal, call: CallRecord) -> None:
        answered = await self._complete(call)
        if answered is None:
            self.failed_in_a_row += 1
            if self.failed_in_a_row >= MAX_FAILED_CALLS_IN_A_ROW and self.stop_reason is None:
                self.stop_reason = f"{self.failed_in_a_row} calls in a row failed: {self.outcome.errors[-1]}"
            self._admit_all(proposal, [])
            return
        self.failed_in_a_row = 0
        records = []
        for completion in answered.completions:
            parsed = parse_answer(completion.text, proposal.parent_source, completion.finish_reason)
            records.append(
                self.s.store.add_candidate(
                    self.s.run.id,
                    f"{proposal.key}/{completion.index}",
                    "llm",
                    round=proposal.round,
                    island=proposal.island,
                    operator=proposal.operator,
                    parents=list(proposal.parents),
                    completion_id=completion.id,
                    source=parsed.source,
                    code_hash=None if parsed.source is None else code_hash(parsed.source),
                    parse={"kind": parsed.kind, "reason": parsed.reason, "notes": parsed.notes},
                    meta={"model": answered.model},
                )
            )
        self._admit_all(proposal, records)

    # Candidates: novelty, cache, verifier, judge.

    def _admit_all(self, proposal: Proposal, records: list[CandidateRecord], near: bool = True) -> None:
        self.members[proposal.key] = [r.id for r in records]
        self.unsettled[proposal.key] = {r.id for r in records}
        if not records:
            self._settle(proposal)
        for record in records:
            self._admit(record, near)

    def _admit(self, record: CandidateRecord, near: bool) -> None:
        store, run_id = self.s.store, self.s.run.id
        candidate = candidate_from_record(record)
        if candidate.verdict is not None or candidate.skipped is not None:
            self._observe(candidate, record.observed)
            return
        if candidate.source is None:
            verdict = no_solution_verdict(
                self.s.context.problem,
                self.s.run.device_name,
                record.parse.get("reason", ""),
                record.parse.get("notes", []),
            )
            store.record_verdict(candidate.id, verdict.to_dict(), self.s.cache_key, None, run_id)
            candidate.verdict = verdict
            self._observe(candidate)
            return
        if why := self.novelty.why_not_novel(candidate.source, near):
            store.update_candidate(candidate.id, skipped=why)
            candidate.skipped = why
            self._observe(candidate)
            return
        self.novelty.add(candidate.id, candidate.source)
        cached = store.cached_verdict(code_hash(candidate.source), self.s.cache_key)
        if cached is not None:
            store.use_cached_verdict(candidate.id, cached.id)
            candidate.verdict = candidate_from_record(store.candidate(candidate.id)).verdict
            self._observe(candidate)
            return
        path = self.s.run_dir / f"c{candidate.id}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(candidate.source)
        store.update_candidate(candidate.id, path=str(path))
        self.waiting_for_judge[candidate.id] = candidate
        self.queue.append(candidate.id)
        if record.verifier is not None:
            self.opinions[candidate.id] = record.verifier["verdict"]
        elif self.s.verifier is not None:
            self._spawn(self._verify(candidate), "verify")

    async def _verify(self, candidate: Candidate) -> None:
        context = self.s.context
        assert self.s.verifier is not None and candidate.source is not None
        prompt = verifier_prompt(
            context.builder, context.problem, context.device, context.hardware, candidate.source
        )
        request = request_for(prompt.messages(), 1, self.s.llm_config)
        call = self.s.store.start_call(
            self.s.run.id,
            f"verify/{candidate.id}",
            "verify",
            self.s.verifier,
            request_to_dict(request),
            {"candidate": candidate.id},
        )
        answered = await self._complete(call)
        if answered is None or not answered.completions:
            return
        opinion = {**parse_opinion(answered.completions[0].text), "model": self.s.verifier}
        self.s.store.update_candidate(candidate.id, verifier=opinion)
        self.opinions[candidate.id] = opinion["verdict"]

    def _judge_next(self) -> None:
        if "judge" in self.tasks.values() or not self.queue:
            return
        self.queue.sort(key=lambda cid: (PRIORITY.get(self.opinions.get(cid), 1), cid))
        self._spawn(self._judge(self.waiting_for_judge.pop(self.queue.pop(0))), "judge")

    async def _judge(self, candidate: Candidate) -> None:
        loop = asyncio.get_running_loop()
        context, store = self.s.context, self.s.store
        assert candidate.source is not None
        path = self.s.run_dir / f"c{candidate.id}.py"
        arch = context.hardware.target
        resources = None
        if context.device.startswith("cuda") and arch:
            resources = asyncio.ensure_future(asyncio.to_thread(ptxas_resources, candidate.source, arch))
        started = time.monotonic()
        verdict = await loop.run_in_executor(self.pool, self.s.judge.judge, path)
        wall_s = time.monotonic() - started
        candidate.verdict = verdict
        facts = []
        if resources is not None and (found := await resources):
            candidate.meta.update(ptxas=[asdict(r) for r in found], arch=arch)
            facts.append(describe_resources(found, arch or ""))
        if self._is_new_best(candidate) and context.config.profile and context.device.startswith("cuda"):
            profile = await loop.run_in_executor(self.pool, self._profile, candidate, path)
            candidate.meta["profile"] = asdict(profile)
            facts.append(profile.describe())
        self.outcome.judge_busy_s += time.monotonic() - started
        candidate.facts = tuple(facts)
        store.record_verdict(
            candidate.id,
            verdict.to_dict(),
            self.s.cache_key,
            code_hash(candidate.source),
            self.s.run.id,
            wall_s,
        )
        store.update_candidate(candidate.id, meta=candidate.meta)
        self._observe(candidate)

    def _is_new_best(self, candidate: Candidate) -> bool:
        top = best(list(self.s.context.candidates.values()))
        return candidate.correct and (top is None or rank(candidate) < rank(top))

    def _profile(self, candidate: Candidate, path: Path) -> Any:
        from cudasmith.harness.nsight import profile

        assert candidate.verdict is not None
        public = [c for c in candidate.verdict.configs if not c.hidden and isinstance(c.config, dict)]
        slowest = max(public, key=lambda c: c.time_ms or 0.0, default=None)
        config = slowest.config if slowest is not None and isinstance(slowest.config, dict) else {}
        return profile(path, self.s.context.problem.path, config, self.s.run.secret_seed or 0)

    # Settling.

    def _observe(self, candidate: Candidate, observed: int | None = None) -> None:
        if observed is None:
            observed = self.observed
            self.s.store.update_candidate(candidate.id, observed=observed)
        self.observed = max(self.observed, observed + 1)
        self.s.context.candidates[candidate.id] = candidate
        if candidate.model is not None and candidate.verdict is not None:
            self.s.ensemble.record_verdict(candidate.model, candidate.correct)
        waiting = self.unsettled.get(candidate.proposal, set())
        waiting.discard(candidate.id)
        if not waiting and candidate.proposal in self.proposals:
            self._settle(self.proposals[candidate.proposal])

    def _settle(self, proposal: Proposal) -> None:
        if proposal.key in self.settled:
            return
        self.settled.add(proposal.key)
        ids = self.members.get(proposal.key, [])
        candidates = [self.s.context.candidates[i] for i in ids if i in self.s.context.candidates]
        run_id = self.s.run.id
        for event in self.s.strategy.settled(proposal, candidates):
            self.s.store.add_event(run_id, event.key, event.kind, event.data)
        self.s.store.add_event(run_id, f"settled/{proposal.key}", "settled", {"candidates": ids})

    # Resuming.

    def restore(self) -> None:
        """Rebuild the strategy from the stored events, then pick up the work a kill interrupted: stored
        answers are parsed, unanswered calls sent again as stored, unjudged candidates queued."""
        store, run_id = self.s.store, self.s.run.id
        records = {r.id: r for r in store.candidates(run_id)}
        calls = {c.key: c for c in store.calls(run_id)}
        spent = sum(c.cost_usd or 0.0 for call in calls.values() for c in call.completions)
        self.s.budget.add(spent)
        for call in calls.values():
            self.latencies += [c.latency_s or 0.0 for c in call.completions]
            if call.purpose == "propose":
                for completion in call.completions:
                    self.s.ensemble.record_answer(call.model, completion.cost_usd)
        self.observed = 1 + max((r.observed for r in records.values() if r.observed is not None), default=-1)
        for event in store.events(run_id):
            key = event["key"].split("/", 1)[1]
            if event["kind"] == "proposal":
                call = calls.get(key)
                prompt = None if call is None else prompt_from_request(call.request)
                proposal = Proposal.from_dict(event["data"], prompt)
                self.proposals[key] = proposal
                self.s.strategy.proposed(proposal)
            elif event["kind"] == "settled":
                self.members[key] = list(event["data"]["candidates"])
                for cid in self.members[key]:
                    candidate = candidate_from_record(records[cid])
                    self.s.context.candidates[cid] = candidate
                    if candidate.source is not None and candidate.skipped is None:
                        self.novelty.add(cid, candidate.source)
                self._settle(self.proposals[key])
        for key, proposal in self.proposals.items():
            if key in self.settled:
                continue
            if proposal.prompt is None:
                self._admit_all(proposal, self._variants(proposal), near=False)
            elif calls[key].status == "failed":
                self._admit_all(proposal, [])
            else:
                self._spawn(self._ask(proposal, calls[key]), "propose")

    def _notify(self) -> None:
        if self.s.on_change is None:
            return
        candidates = list(self.s.context.candidates.values())
        self.s.on_change(
            Snapshot(
                progress=self.s.strategy.progress(),
                judged=sum(c.verdict is not None for c in candidates),
                queued=len(self.queue),
                judging="judge" in self.tasks.values(),
                calls_in_flight=self._calls_in_flight(),
                best=best(candidates),
                spent_usd=self.s.budget.spent_usd,
                latency_s=statistics.median(self.latencies) if self.latencies else None,
                idle_s=self.outcome.judge_idle_waiting_s,
            )
        )
