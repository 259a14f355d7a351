"""The asynchronous search driver: model calls stay in flight while the judge works, so the judge never
waits for an answer when there is work, and no more calls are made than it can keep up with.

A strategy proposes; the driver stores each proposal and call before it is sent, parses the answers
into candidates and hands them to `admission` (novelty, the evaluation cache, the optional verifier,
the executor's lanes, as many candidates at once as it has lanes, the hardware's facts), and tells the strategy when all candidates of
a proposal are settled. Everything is in the run store as it happens, so a run killed at any point
resumes (`restore`) with no stored answer asked for again and no stored verdict judged again.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Coroutine
from dataclasses import replace
from typing import Any

from cudasmith.errors import BudgetExhausted, LLMError
from cudasmith.llm import request_for
from cudasmith.search.admission import Admission
from cudasmith.search.convert import (
    candidate_from_record,
    prompt_from_request,
    request_from_dict,
    request_to_dict,
)
from cudasmith.search.parsing import parse_answer
from cudasmith.search.run_folder import write_answer, write_verdict
from cudasmith.search.state import Outcome, Search, Snapshot
from cudasmith.search.strategies.base import Proposal, SearchCandidate, best
from cudasmith.store import CallRecord, CandidateRecord, code_hash

# After this many calls in a row failed for good (retries spent), the run stops: the model is down.
MAX_FAILED_CALLS_IN_A_ROW = 3
# Seconds that model calls in flight may still take to answer after the judge broke off the run.
ANSWER_GRACE_S = 60.0


class Driver:
    """Runs one search to its end (or its budget's)."""

    def __init__(self, search: Search) -> None:
        self.s = search
        self.tasks: dict[asyncio.Task[None], str] = {}
        self.proposals: dict[str, Proposal] = {}
        self.members: dict[str, list[int]] = {}
        self.unsettled: dict[str, set[int]] = {}
        self.settled: set[str] = set()
        self.rng = random.Random(f"{search.context.seed}/models")
        self.observed = 0
        self.failed_in_a_row = 0
        self.stop_reason: str | None = None
        self.outcome = Outcome(stop_reason="")
        self.latencies: list[float] = []
        self.admission = Admission(search, self._observe, self._spawn, self._complete)

    async def run(self) -> Outcome:
        """Search until the strategy is finished, the budget is spent or the model keeps failing."""
        self.restore()
        try:
            while True:
                self._fill()
                while self._judging() < self.s.executor.slots and self.admission.queue:
                    self.admission.judge_next()
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
        except Exception:
            await self._keep_answers_in_flight()
            raise
        finally:
            for task in self.tasks:
                task.cancel()
            self.admission.pool.shutdown(wait=False, cancel_futures=True)
        self.outcome.stop_reason = self.stop_reason or self.s.strategy.finished() or "nothing left to propose"
        return self.outcome

    async def _keep_answers_in_flight(self) -> None:
        """After a break (the judge failing; not Ctrl-C, which cancels at once), model calls already sent
        finish for up to ANSWER_GRACE_S, so that their answers, paid for, are stored: a resumed run judges
        them instead of asking again."""
        asking = [task for task, kind in self.tasks.items() if kind == "propose" and not task.done()]
        if asking:
            await asyncio.wait(asking, timeout=ANSWER_GRACE_S)

    def _spawn(self, work: Coroutine[Any, Any, None], kind: str) -> None:
        self.tasks[asyncio.ensure_future(work)] = kind

    def _judging(self) -> int:
        return sum(kind == "judge" for kind in self.tasks.values())

    def _calls_in_flight(self) -> int:
        return sum(kind == "propose" for kind in self.tasks.values())

    def _judge_waits_for_answers(self) -> bool:
        """A lane of the judge has nothing to do while model calls that will give it work are in flight."""
        idle_lane = self._judging() < self.s.executor.slots
        return idle_lane and not self.admission.queue and self._calls_in_flight() > 0

    # Proposals and model calls.

    def _fill(self) -> None:
        if self.stop_reason is None and (reason := self.s.strategy.finished()):
            self.stop_reason = reason
        config = self.s.context.config
        lanes = self.s.executor.slots
        room = config.max_in_flight * lanes - self._calls_in_flight()
        full = len(self.admission.queue) >= config.max_queued * lanes
        if self.stop_reason is not None or room <= 0 or full:
            return
        try:
            self.s.budget.check()
        except BudgetExhausted as exc:
            self.stop_reason = str(exc)
            return
        for proposal in self.s.strategy.propose(room):
            self._start(proposal)

    def _start(self, proposal: Proposal) -> None:
        call = None
        if proposal.prompt is not None:
            model = proposal.model or self.s.ensemble.pick(self.rng)
            request = request_for(proposal.prompt.messages(), proposal.n, self.s.llm_config)
            # Stored before the proposal's event: a run killed between the two proposes the same key
            # again and finds this call (the store returns it as first stored).
            call = self.s.store.start_call(
                self.s.run.id,
                proposal.key,
                "propose",
                model,
                request_to_dict(request),
                replace(proposal, model=model).to_dict(),
            )
            proposal = replace(proposal, model=call.model)
        self.s.store.add_event(self.s.run.id, f"proposal/{proposal.key}", "proposal", proposal.to_dict())
        self.proposals[proposal.key] = proposal
        self.s.strategy.proposed(proposal)
        if call is None:
            self._admit_all(proposal, self._variants(proposal), near=False)
        else:
            self._spawn(self._ask(proposal, call), "propose")

    def _variants(self, proposal: Proposal) -> list[CandidateRecord]:
        """The candidates a proposal brought without a model (tunable variants)."""
        values = proposal.meta.get("values", [])
        return [
            self._add(
                proposal,
                index,
                "tunable",
                source,
                meta={"tunables": values[index] if index < len(values) else {}},
            )
            for index, source in enumerate(proposal.sources)
        ]

    def _add(
        self, proposal: Proposal, index: int, origin: str, source: str | None, **fields: Any
    ) -> CandidateRecord:
        """Store the proposal's candidate `index`: its key, lineage and code (`fields`: the rest)."""
        return self.s.store.add_candidate(
            self.s.run.id,
            f"{proposal.key}/{index}",
            origin,
            round=proposal.round,
            island=proposal.island,
            operator=proposal.operator,
            parents=list(proposal.parents),
            source=source,
            code_hash=None if source is None else code_hash(source),
            **fields,
        )

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
            self.outcome.failures.append(exc)
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
            record = self._add(
                proposal,
                completion.index,
                "llm",
                parsed.source,
                completion_id=completion.id,
                parse={"kind": parsed.kind, "reason": parsed.reason, "notes": parsed.notes},
                meta={"model": answered.model},
            )
            write_answer(self.s.run_dir, record.id, completion.text)
            records.append(record)
        self._admit_all(proposal, records)

    # Candidates: novelty, cache, verifier, judge.

    def _admit_all(self, proposal: Proposal, records: list[CandidateRecord], near: bool = True) -> None:
        self.members[proposal.key] = [r.id for r in records]
        self.unsettled[proposal.key] = {r.id for r in records}
        if not records:
            self._settle(proposal)
        for record in records:
            self.admission.admit(record, near)

    # Settling.

    def _observe(self, candidate: SearchCandidate, observed: int | None = None) -> None:
        if observed is None:
            observed = self.observed
            self.s.store.update_candidate(candidate.id, observed=observed)
        self.observed = max(self.observed, observed + 1)
        self.s.context.candidates[candidate.id] = candidate
        if candidate.verdict is not None:
            write_verdict(self.s.run_dir, candidate.id, candidate.verdict.to_dict())
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
            key = event.key.split("/", 1)[1]
            if event.kind == "proposal":
                stored = calls.get(key)
                prompt = None if stored is None else prompt_from_request(stored.request)
                proposal = Proposal.from_dict(event.data, prompt)
                self.proposals[key] = proposal
                self.s.strategy.proposed(proposal)
            elif event.kind == "settled":
                self.members[key] = list(event.data["candidates"])
                for cid in self.members[key]:
                    candidate = candidate_from_record(records[cid])
                    self.s.context.candidates[cid] = candidate
                    self.admission.remember(candidate)
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
                queued=len(self.admission.queue),
                judging=self._judging(),
                calls_in_flight=self._calls_in_flight(),
                best=best(candidates),
                spent_usd=self.s.budget.spent_usd,
                latency_s=statistics.median(self.latencies) if self.latencies else None,
                idle_s=self.outcome.judge_idle_waiting_s,
                executor=self.s.executor.stats(),
            )
        )


async def drive(search: Search) -> Outcome:
    """Run a search to its end, then close its model clients."""
    try:
        return await Driver(search).run()
    finally:
        for client in search.clients.values():
            await client.close()
