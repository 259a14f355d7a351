"""The judge as a service, without the web: submissions in, verdicts out, over an executor's lanes (one judge
session per (problem, options) and per GPU, K candidates in flight each), with nothing lost.

- A submission is a candidate of its pair's `serve` run in the run store, written before its id is
  given. Its verdict is recorded there too (the evaluation cache's entry), before anyone hears of it.
- Started on a store that holds submissions without a verdict (a server killed, kill -9 included), the
  service judges them again, in the order they came; finished ones are served from the store.
- A submission whose code, problem and options have a verdict (same device, same judge) reuses it unless
  `fresh`; one identical to a submission still being judged waits for that one's verdict. Nothing is
  judged twice.
- The queue holds at most `max_queue` submissions not yet done: a batch that does not fit is refused whole
  (429, with when to try again), and nothing already queued is touched.

Candidate code runs only in the lanes' sandboxed workers: this process reads a submission's source as text
(the static screen parses it, never runs it).
"""

from __future__ import annotations

import math
import queue
import secrets
import threading
import time
import traceback
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field, replace

from cudasmith.errors import UsageError
from cudasmith.exec.base import Executor
from cudasmith.exec.jobs import Job
from cudasmith.harness.options import EvalOptions
from cudasmith.harness.verdict import Verdict
from cudasmith.harness.version import harness_version
from cudasmith.jsontypes import JsonDict
from cudasmith.report.export import reward
from cudasmith.serve.models import CandidateIn, Metrics, Served
from cudasmith.serve.protocol import IDLE_S, MAX_QUEUE, MAX_SOURCE_BYTES, State
from cudasmith.serve.sessions import Refused, Sessions, SessionSpec
from cudasmith.store import CacheKey, RunStore, code_hash
from cudasmith.store.integrity import TAMPERED_REASON
from cudasmith.store.shapes import CandidateMeta

# How often sessions idle for ServeSettings.idle_s are looked for (and closed).
IDLE_CHECK_S = 30.0
# What a full queue's Retry-After says when no verdict was given in the last minute to tell the pace by;
# and the most it ever says.
RETRY_AFTER_S = 10
RETRY_AFTER_MAX_S = 600
# The window of "verdicts per minute".
RATE_WINDOW_S = 60.0
# Beside the run store: the problems given as source, each under its hash.
PROBLEMS_FOLDER = "serve-problems"
# What a candidate's file is called where a lane writes it (a request's name is shown, never a path).
SOLUTION_FILE = "solution.py"


@dataclass(frozen=True)
class ServeSettings:
    """How the service judges and what it accepts: the options every submission starts from (device,
    limits), the queue's size, the largest source, how long an idle session is kept, and whether
    problems may be given as source."""

    options: EvalOptions
    max_queue: int = MAX_QUEUE
    max_source_bytes: int = MAX_SOURCE_BYTES
    idle_s: float = IDLE_S
    accept_problems: bool = True


@dataclass
class _Pending:
    """A submission not yet done: where it belongs, its code's hash, what its verdict calls it, the
    executor's future while it is judged (None while it waits for a twin's), the submissions waiting for
    its verdict, and `done`, set once its outcome is stored."""

    id: int
    spec: SessionSpec
    code: str
    name: str
    future: Future[Verdict] | None = None
    twin: int | None = None
    followers: list[int] = field(default_factory=list)
    done: Future[None] = field(default_factory=Future)


class JudgeService:
    """Submissions over `executor`'s lanes into `store`; see the module's docstring. A context manager:
    close() stops the lanes and leaves what is not judged in the store for the next start."""

    def __init__(self, store: RunStore, executor: Executor, settings: ServeSettings) -> None:
        self.store = store
        self.executor = executor
        self.settings = settings
        # Problems given as source are kept beside the store (read again after a restart).
        problems = store.path.parent / PROBLEMS_FOLDER
        self.sessions = Sessions(store, settings.options, problems, settings.accept_problems)
        self.started = time.monotonic()
        self._lock = threading.RLock()
        self._pending: dict[int, _Pending] = {}
        self._twins: dict[tuple[str, CacheKey], int] = {}
        self._finished: deque[float] = deque()
        self._counts = {"submitted": 0, "judged": 0, "reused": 0, "failed": 0, "closed_idle": 0}
        self._closed = threading.Event()
        # Verdicts are stored by a thread of their own, so that a lane's thread goes on to its next
        # candidate while the store writes.
        self._judged: queue.Queue[tuple[int, Future[Verdict]] | None] = queue.Queue()
        self._recorder = threading.Thread(target=self._record_all, name="cudasmith-serve-record", daemon=True)
        self._recorder.start()
        self._idler = threading.Thread(target=self._close_idle, name="cudasmith-serve-idle", daemon=True)
        self._idler.start()
        self.recovered = self._recover()

    # -- submissions -----------------------------------------------------------------------------

    def submit(self, candidates: list[CandidateIn]) -> list[int]:
        """Store the candidates and queue them (or give them stored verdicts); their ids, in order. All or
        none: a Refused error (413, 404, 422, 403, 429) stores nothing."""
        limit = self.settings.max_source_bytes
        for candidate in candidates:
            for what, text in (("solution", candidate.source), ("problem", candidate.problem or "")):
                if len(text.encode()) > limit:
                    raise Refused(413, f"the {what}'s source is over the server's limit of {limit} bytes")
        specs = [self.sessions.resolve(c.task, c.problem, c.options) for c in candidates]
        with self._lock:
            if self._closed.is_set():
                raise Refused(503, "the server is stopping")
            room = self.settings.max_queue - len(self._pending)
            if len(candidates) > room:
                raise Refused(
                    429,
                    f"the queue is full ({len(self._pending)} of {self.settings.max_queue} waiting); "
                    f"{room} more fit now",
                    self._retry_after(len(candidates) - room),
                )
            return [self._admit(candidate, spec) for candidate, spec in zip(candidates, specs, strict=True)]

    def _admit(self, candidate: CandidateIn, spec: SessionSpec) -> int:
        code = code_hash(candidate.source)
        name = candidate.name or SOLUTION_FILE
        meta = CandidateMeta(name=name, fresh=candidate.fresh, task=spec.problem.name)
        record = self.store.add_candidate(
            spec.run_id, secrets.token_hex(8), "file", source=candidate.source, code_hash=code, meta=meta
        )
        self._counts["submitted"] += 1
        self._route(record.id, spec, code, name, candidate.source, candidate.fresh)
        return record.id

    def _route(self, id: int, spec: SessionSpec, code: str, name: str, source: str, fresh: bool) -> None:
        """A stored verdict, else a twin being judged to wait for, else the executor's queue (the caller
        holds the lock)."""
        twin_key = (code, spec.key)
        if not fresh:
            stored = self.store.cached_verdict(code, spec.key)
            if stored is not None:
                self.store.use_cached_verdict(id, stored.id)
                self._note_finished("reused")
                return
            twin = self._twins.get(twin_key)
            if twin is not None:
                self._pending[id] = _Pending(id, spec, code, name, twin=twin)
                self._pending[twin].followers.append(id)
                return
        pending = self._pending[id] = _Pending(id, spec, code, name)
        self._twins.setdefault(twin_key, id)
        pending.future = self.executor.submit(Job(str(id), spec.problem, spec.options, source, SOLUTION_FILE))
        pending.future.add_done_callback(lambda done: self._judged.put((id, done)))

    def _recover(self) -> int:
        """Queue again every stored submission without a verdict (a server stopped or killed before it was
        judged), in the order they came; how many. One whose problem is gone or changed fails, saying so."""
        waiting = []
        for run in self.sessions.runs():
            unjudged = [c for c in self.store.candidates(run.id) if c.verdict is None and c.skipped is None]
            if not unjudged:
                continue
            try:
                spec: SessionSpec | str = self.sessions.of_run(run)
            except Refused as refused:
                spec = str(refused)
            waiting += [(candidate, spec) for candidate in unjudged]
        with self._lock:
            for candidate, spec in sorted(waiting, key=lambda pair: pair[0].id):
                if isinstance(spec, str):
                    self.store.update_candidate(candidate.id, skipped=spec)
                    continue
                name, fresh = candidate.meta.get("name", SOLUTION_FILE), bool(candidate.meta.get("fresh"))
                code = candidate.code_hash or code_hash(candidate.source or "")
                self._route(candidate.id, spec, code, name, candidate.source or "", fresh)
        return len(waiting)

    # -- verdicts --------------------------------------------------------------------------------

    def _record_all(self) -> None:
        while (item := self._judged.get()) is not None:
            try:
                self._record(*item)
            except Exception:  # the store failed: said on stderr; the submission stays unjudged there
                traceback.print_exc()

    def _record(self, id: int, future: Future[Verdict]) -> None:
        """Store a judged submission's verdict (or the judge's failure), and give it to those waiting. Once
        the service stops, nothing more is stored: a candidate whose workers were stopped mid-judgement has
        no verdict, and is judged at the next start."""
        if future.cancelled() or self._closed.is_set():
            return
        verdict_id, failure = None, None
        with self._lock:
            pending = self._pending.pop(id)
            spec = pending.spec
            try:
                verdict = future.result()
            except Exception as exc:  # the judge's own failure: the submission fails, saying so
                failure = f"the judge failed: {type(exc).__name__}: {exc}"
            else:
                verdict.solution = pending.name
                verdict_id = self.store.record_verdict(
                    id, verdict, spec.key, pending.code, spec.run_id, verdict.wall_s
                )
            if self._twins.get((pending.code, spec.key)) == id:
                del self._twins[(pending.code, spec.key)]
            finished = [pending, *(self._pending.pop(follower) for follower in pending.followers)]
            for each in finished:
                if failure is not None:
                    self.store.update_candidate(each.id, skipped=failure)
                elif each is not pending:
                    self.store.use_cached_verdict(each.id, verdict_id)  # type: ignore[arg-type]
                self._note_finished("failed" if failure else "judged" if each is pending else "reused")
        for each in finished:
            each.done.set_result(None)

    def _note_finished(self, outcome: str) -> None:
        """Count a finished submission, and keep when it finished for the last RATE_WINDOW_S (the caller
        holds the lock)."""
        now = time.monotonic()
        self._counts[outcome] += 1
        self._finished.append(now)
        while now - self._finished[0] > RATE_WINDOW_S:
            self._finished.popleft()

    # -- what clients read -----------------------------------------------------------------------

    def state(self, id: int) -> Served:
        """Where submission `id` stands (Refused 404 when no such submission was made here)."""
        with self._lock:
            pending = self._pending.get(id)
            if pending is not None:
                judged = self._pending.get(pending.twin) if pending.twin is not None else pending
                running = judged is not None and judged.future is not None and judged.future.running()
                state = State.RUNNING if running else State.QUEUED
                return Served(id=id, state=state, task=pending.spec.problem.name)
        try:
            record = self.store.candidate(id)
        except UsageError:
            raise Refused(404, f"no submission {id} on this server") from None
        run = self.store.run(record.run_id)
        if run.kind != "serve":
            raise Refused(404, f"no submission {id} on this server")
        name = record.meta.get("name", SOLUTION_FILE)
        if record.tampered:
            return Served(id=id, state=State.FAILED, task=run.task, error=TAMPERED_REASON)
        if record.verdict is not None:
            verdict = replace(record.verdict, solution=name)
            return Served(id=id, state=State.DONE, task=run.task, cached=record.verdict_cached,
                          verdict=verdict.to_dict(), reward=reward(verdict))  # fmt: skip
        if record.skipped is not None:
            return Served(id=id, state=State.FAILED, task=run.task, error=record.skipped)
        return Served(id=id, state=State.QUEUED, task=run.task)

    def done(self, id: int) -> Future[None] | None:
        """A future set once submission `id` is done, or None when it is not waiting here."""
        with self._lock:
            pending = self._pending.get(id)
            return None if pending is None else pending.done

    def metrics(self) -> Metrics:
        """The queue, the lanes and the counts now."""
        stats = self.executor.stats()
        in_flight = sum(lane.judging for lane in stats.lanes)
        with self._lock:
            now = time.monotonic()
            while self._finished and now - self._finished[0] > RATE_WINDOW_S:
                self._finished.popleft()
            counts, finished, pending = dict(self._counts), len(self._finished), len(self._pending)
        return Metrics(
            queue_depth=max(0, pending - in_flight),
            in_flight=in_flight,
            verdicts_per_minute=finished * 60.0 / min(RATE_WINDOW_S, max(now - self.started, 1.0)),
            gpu_busy=stats.gpu_utilization,
            lanes_busy=stats.busy_fraction,
            submitted=counts["submitted"],
            judged=counts["judged"],
            reused=counts["reused"],
            failed=counts["failed"],
            sessions_closed_idle=counts["closed_idle"],
            uptime_s=round(now - self.started, 3),
        )

    def health(self) -> JsonDict:
        """What /v1/health says: the device, the judge and its options, the executor and its lanes."""
        return {
            "device": self.settings.options.device,
            "device_name": self.sessions.device_name,
            "judge": harness_version(),
            "judging": self.settings.options.stored(),
            "executor": self.executor.kind,
            "lanes": [backend.name for backend in self.executor.backends],
            "uptime_s": round(time.monotonic() - self.started, 3),
        }

    def _retry_after(self, excess: int) -> int:
        """Seconds until `excess` more submissions would fit, at the pace of the last minute."""
        rate = self.metrics().verdicts_per_minute / 60.0
        if rate <= 0:
            return RETRY_AFTER_S
        return max(1, min(RETRY_AFTER_MAX_S, math.ceil(excess / rate)))

    # -- upkeep ----------------------------------------------------------------------------------

    def _close_idle(self) -> None:
        every = min(IDLE_CHECK_S, max(0.1, self.settings.idle_s / 4))
        while not self._closed.wait(every):
            closed = self.executor.close_idle(self.settings.idle_s)
            with self._lock:
                self._counts["closed_idle"] += closed

    def close(self) -> None:
        """Stop taking submissions, stop the lanes (what is queued or being judged stays unjudged in the
        store, judged at the next start) and store the verdicts already given."""
        self._closed.set()
        self.executor.close()
        self._judged.put(None)
        self._recorder.join()
        self._idler.join(timeout=IDLE_CHECK_S)

    def __enter__(self) -> JudgeService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
