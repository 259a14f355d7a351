"""What becomes of a candidate before its strategy hears of it: no solution found (a verdict at once),
a repeat of an earlier candidate (skipped, never judged), a verdict in the cache, or a place in the
judge's queue, where the optional verifier's opinion orders it; its build starts at once (see
exec/prebuild.py). Then the executor's lanes (one judge session per GPU) judge it, and the hardware's
facts come: ptxas resources (in parallel with judging) and Nsight Compute metrics of each new best.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

from cudasmith.exec import Job, ProblemRef
from cudasmith.harness.nsight import profile
from cudasmith.llm import request_for
from cudasmith.search.convert import candidate_from_record, no_solution_verdict, request_to_dict
from cudasmith.search.novelty import NoveltyFilter
from cudasmith.search.resources import describe_resources, ptxas_resources
from cudasmith.search.run_folder import write_code
from cudasmith.search.state import Search
from cudasmith.search.strategies.base import SearchCandidate, best, rank
from cudasmith.search.verifier import PRIORITY, parse_opinion, verifier_prompt
from cudasmith.store import CallRecord, CandidateRecord, code_hash
from cudasmith.store.metrics import screened_only


class Admission:
    """The candidates between their answer and their verdict, and the one being judged."""

    def __init__(
        self,
        search: Search,
        observe: Callable[[SearchCandidate, int | None], None],
        spawn: Callable[[Coroutine[Any, Any, None], str], None],
        complete: Callable[[CallRecord], Awaitable[CallRecord | None]],
    ) -> None:
        self.s = search
        self._observe = observe
        self._spawn = spawn
        self._complete = complete
        self.queue: list[int] = []
        self.waiting: dict[int, SearchCandidate] = {}
        self.paths: dict[int, Path] = {}
        self.opinions: dict[int, str] = {}
        self.novelty = NoveltyFilter(search.context.config.novelty_threshold)
        self.problem = ProblemRef.of(search.context.problem)
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="cudasmith-profile")

    def remember(self, candidate: SearchCandidate) -> None:
        """A candidate settled before a resume: its code is known again (one skipped as a copy adds
        nothing), or a later copy of it would be judged as new."""
        if candidate.source is not None and candidate.skipped is None:
            self.novelty.add(candidate.id, candidate.source)

    def admit(self, record: CandidateRecord, near: bool = True) -> None:
        """Take in a new (or, on resume, a stored) candidate."""
        store, run_id = self.s.store, self.s.run.id
        candidate = candidate_from_record(record)
        if candidate.verdict is not None or candidate.skipped is not None:
            self.remember(candidate)  # judged before a resume
            self._observe(candidate, record.observed)
            return
        if candidate.source is None:
            verdict = no_solution_verdict(
                self.s.context.problem,
                self.s.run.device_name,
                record.parse.get("reason", ""),
                record.parse.get("notes", []),
            )
            store.record_verdict(candidate.id, verdict, self.s.cache_key, None, run_id)
            candidate.verdict = verdict
            self._observe(candidate, None)
            return
        # Every candidate with code has its file in the run's folder, a repeat or a cached one too.
        path = write_code(self.s.run_dir, candidate.id, candidate.source)
        store.update_candidate(candidate.id, path=str(path))
        if self.s.novelty and (why := self.novelty.why_not_novel(candidate.source, near)):
            store.update_candidate(candidate.id, skipped=why)
            candidate.skipped = why
            self._observe(candidate, None)
            return
        self.novelty.add(candidate.id, candidate.source)
        cached = store.cached_verdict(code_hash(candidate.source), self.s.cache_key)
        # A screened verdict was held to another run's bar: it is judged again, never reused.
        if cached is not None and not screened_only(cached.verdict):
            store.use_cached_verdict(candidate.id, cached.id)
            candidate.verdict = store.candidate(candidate.id).verdict
            self._observe(candidate, None)
            return
        self.waiting[candidate.id] = candidate
        self.paths[candidate.id] = path
        self.queue.append(candidate.id)
        self.s.executor.prebuild(self._job(str(candidate.id), candidate.source, path))
        if record.verifier is not None:
            self.opinions[candidate.id] = record.verifier["verdict"]
        elif self.s.verifier is not None:
            self._spawn(self._verify(candidate), "verify")

    async def _verify(self, candidate: SearchCandidate) -> None:
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
        opinion = parse_opinion(answered.completions[0].text)
        opinion["model"] = self.s.verifier
        self.s.store.update_candidate(candidate.id, verifier=opinion)
        self.opinions[candidate.id] = opinion["verdict"]

    def _job(self, key: str, source: str, path: Path) -> Job:
        return Job(key, self.problem, self.s.options, source, path.name, str(path), best_speedup=self._best())

    def _best(self) -> float | None:
        """The run's best confirmed speedup so far, where the judge screens candidates (harness/confirm.py)."""
        if self.s.options.confirm_margin is None:
            return None
        return max((c.speedup for c in self.s.context.candidates.values() if c.speedup), default=None)

    def judge_next(self) -> None:
        """Start judging the first candidate of the queue: the verifier's passes, then the unreviewed,
        then its fails, each oldest first."""
        if not self.queue:
            return
        self.queue.sort(key=lambda cid: (PRIORITY.get(self.opinions.get(cid), 1), cid))
        self._spawn(self._judge(self.waiting.pop(self.queue.pop(0))), "judge")

    async def _judge(self, candidate: SearchCandidate) -> None:
        loop = asyncio.get_running_loop()
        context, store = self.s.context, self.s.store
        assert candidate.source is not None
        path = self.paths.pop(candidate.id)
        job = self._job(str(candidate.id), candidate.source, path)
        arch = context.hardware.target
        resources = None
        if context.device.startswith("cuda") and arch:
            resources = asyncio.ensure_future(asyncio.to_thread(ptxas_resources, candidate.source, arch))
        started = time.monotonic()
        verdict = await self.s.executor.judge(job)
        wall_s = time.monotonic() - started
        # Stored at once: a run killed while the facts below are gathered does not judge it again.
        store.record_verdict(
            candidate.id,
            verdict,
            self.s.cache_key,
            code_hash(candidate.source),
            self.s.run.id,
            wall_s,
        )
        candidate.verdict = verdict
        facts = []
        if resources is not None and (found := await resources):
            candidate.meta["ptxas"], candidate.meta["arch"] = [asdict(r) for r in found], arch
            facts.append(describe_resources(found, arch or ""))
        # Nsight Compute runs here, on the run's device: only where the lanes are this machine's GPUs.
        local_gpu = context.device.startswith("cuda") and self.s.executor.kind == "local"
        if self._is_new_best(candidate) and context.config.profile and local_gpu:
            profile = await loop.run_in_executor(self.pool, self._profile, candidate, path)
            candidate.meta["profile"] = asdict(profile)
            facts.append(profile.describe())
        candidate.facts = tuple(facts)
        store.update_candidate(candidate.id, meta=candidate.meta)
        self._observe(candidate, None)

    def _is_new_best(self, candidate: SearchCandidate) -> bool:
        top = best(list(self.s.context.candidates.values()))
        return candidate.correct and (top is None or rank(candidate) < rank(top))

    def _profile(self, candidate: SearchCandidate, path: Path) -> Any:
        assert candidate.verdict is not None
        public = [c for c in candidate.verdict.configs if not c.hidden and isinstance(c.config, dict)]
        slowest = max(public, key=lambda c: c.time_ms or 0.0, default=None)
        config = slowest.config if slowest is not None and isinstance(slowest.config, dict) else {}
        return profile(path, self.s.context.problem.path, config, self.s.run.secret_seed or 0)
