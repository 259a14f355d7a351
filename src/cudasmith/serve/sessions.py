"""Where a submission belongs: its problem (a built-in task, or a problem's source the server keeps), its
judging options, its key in the store's evaluation cache and the run of the store that holds it.

Every (problem, options) pair is one `serve` run of the run store, found again after a restart: its
candidates are the submissions, its verdicts the judge's. The lanes keep one judge session per pair (and
per GPU) while submissions come (exec/lane.py). No request names a file of the server: a task must be a
name of the built-in suite, and a problem's source is written by the server, under its hash.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path

from cudasmith.errors import CudasmithError
from cudasmith.exec.jobs import ProblemRef
from cudasmith.hardware import device_name
from cudasmith.harness.options import EvalOptions
from cudasmith.jsontypes import JsonDict
from cudasmith.search.judge import cache_key
from cudasmith.serve.models import JudgingOptions
from cudasmith.store import CacheKey, Run, RunStore
from cudasmith.store.start import new_run
from cudasmith.tasks.problem import close_names, list_task_names, load_problem, task_path

RUN_KIND = "serve"
# What a problem given as source is called: PROBLEM_PREFIX and the start of its hash.
PROBLEM_PREFIX = "problem-"


class Refused(CudasmithError):
    """A request the server refuses, with the HTTP status that says why (404 unknown task, 413 too large,
    422 not valid, 429 queue full, 403 not allowed here) and, for a full queue, when to try again."""

    def __init__(self, status: int, message: str, retry_after_s: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class SessionSpec:
    """A (problem, options) pair: the run that stores its submissions, the problem as it travels to the
    lanes, the options judged under, and the evaluation cache's key of its verdicts."""

    run_id: str
    problem: ProblemRef
    options: EvalOptions
    key: CacheKey
    request: JudgingOptions


class Sessions:
    """The (problem, options) pairs of a server's submissions, each with its `serve` run of `store` (those
    of earlier servers on the same store found again). `base`: the server's own options (device, limits),
    which a request's options override; `problems`: where problems given as source are kept."""

    def __init__(
        self, store: RunStore, base: EvalOptions, problems: Path, accept_problems: bool = True
    ) -> None:
        self.store = store
        self.base = base
        self.problems = problems
        self.accept_problems = accept_problems
        self.device_name = device_name(base.device)
        self._lock = threading.Lock()
        self._by_pair: dict[tuple[str, str, str], SessionSpec] = {}
        self._by_run: dict[str, SessionSpec] = {}
        self._checked: set[str] = set()  # problems given as source that loaded

    def runs(self) -> list[Run]:
        """The store's serve runs, oldest first."""
        return self.store.runs(kind=RUN_KIND)

    def resolve(self, task: str | None, problem: str | None, request: JudgingOptions) -> SessionSpec:
        """The pair a submission names, its run made when it is the first of its kind (Refused: why not)."""
        if (task is None) == (problem is None):
            raise Refused(
                422, "give exactly one of 'task' (a built-in task's name) or 'problem' (its source)"
            )
        ref = self._task(task) if task is not None else self._problem(problem or "")
        try:
            options = request.applied(self.base)
        except CudasmithError as exc:
            raise Refused(422, str(exc)) from None
        return self._spec(ref, options, request)

    def of_run(self, run: Run) -> SessionSpec:
        """The pair of a stored serve run, under this server's options (Refused when its problem changed
        or is gone: its submissions cannot be judged as they were made)."""
        with self._lock:
            known = self._by_run.get(run.id)
        if known is not None:
            return known
        path = Path(run.problem_path or "")
        if not path.is_file():
            raise Refused(404, f"the problem of {run.task} is gone from the server ({path.name})")
        ref = ProblemRef.from_file(path, run.task)
        if ref.source_hash != run.task_version:
            raise Refused(409, f"{run.task} changed since this was submitted; submit it again")
        request = JudgingOptions.model_validate(run.options.get("request", {}))
        try:
            options = request.applied(self.base)
        except CudasmithError as exc:
            raise Refused(422, str(exc)) from None
        return self._spec(ref, options, request, run)

    def of_run_id(self, run_id: str) -> SessionSpec | None:
        """The pair of a run this server knows (None: not a serve run, or one it has not met)."""
        with self._lock:
            return self._by_run.get(run_id)

    def _task(self, name: str) -> ProblemRef:
        names = list_task_names()
        if name not in names:
            raise Refused(
                404, f"unknown task {name!r}; {close_names(name, names)}`cudasmith tasks` lists them"
            )
        return ProblemRef.from_file(task_path(name), name)

    def _problem(self, source: str) -> ProblemRef:
        """A problem given as source: kept under its hash, loaded once here to say at once what is wrong
        with it (its module is the reference's code: the judge's own workers run it as they run a task's)."""
        if not self.accept_problems:
            raise Refused(403, "this server judges built-in tasks only (started with --tasks-only)")
        digest = hashlib.sha256(source.encode()).hexdigest()
        path = self.problems / f"{digest[:32]}.py"
        name = f"{PROBLEM_PREFIX}{digest[:12]}"
        with self._lock:
            if digest not in self._checked:
                path.parent.mkdir(parents=True, exist_ok=True)
                if not path.is_file() or path.read_text(errors="replace") != source:
                    path.write_text(source)
                try:
                    load_problem(path, name=name)
                except CudasmithError as exc:
                    raise Refused(422, f"the problem does not load: {exc}") from None
                self._checked.add(digest)
        return ProblemRef(name, str(path), source)

    def _spec(
        self, ref: ProblemRef, options: EvalOptions, request: JudgingOptions, run: Run | None = None
    ) -> SessionSpec:
        key = cache_key(ref, options, self.device_name)
        pair = (ref.name, key.task_version, key.judge_options)
        with self._lock:
            spec = self._by_pair.get(pair)
            if spec is None:
                run = run or self._find(pair) or self._new_run(ref, options, request)
                spec = SessionSpec(run.id, ref, options, key, request)
                self._by_pair[pair] = spec
            if run is not None:
                self._by_run[run.id] = spec
            self._by_run.setdefault(spec.run_id, spec)
            return spec

    def _find(self, pair: tuple[str, str, str]) -> Run | None:
        """The stored run of this pair, made by an earlier server on this store."""
        name, version, digest = pair
        for run in self.store.runs(kind=RUN_KIND, task=name):
            if run.task_version == version and run.options.get("digest") == digest:
                return run
        return None

    def _new_run(self, ref: ProblemRef, options: EvalOptions, request: JudgingOptions) -> Run:
        stored: JsonDict = {
            "request": request.model_dump(exclude_none=True),
            "judge": options.stored(),
            "digest": cache_key(ref, options, self.device_name).judge_options,
        }
        run = new_run(
            RUN_KIND, ref.name, ref.source_hash, options.device, None, problem_path=ref.path, options=stored
        )
        return self.store.create_run(run)
