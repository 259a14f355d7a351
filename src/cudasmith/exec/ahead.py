"""Builds ahead for the solutions one judge session is given at once (`cudasmith eval` of several, a
benchmark's stream): nothing waits on a build.

As soon as the queue is known, every solution whose import compiles something goes to a pool of build
workers (prebuild.build: sandboxed, no GPU, told the GPU's target), extension builds first. The session
then takes the solutions in the order given, except that one whose extension is still building lets
the ready ones go first; its verdict still comes in its place (`judge_built_ahead`), or as soon as
it is done (`judged_as_done`, for a stream). Three `load_inline` solutions thus build
side by side while the session starts, instead of one after another inside the judged workers.

Only extension builds (`load_inline`, `cpp_extension.load`: nvcc and the host compiler over PyTorch's
headers, ~45 s) are waited for. An NVRTC or C build ahead is a head start for solutions further down
the queue; one still running when its solution comes up is overtaken by the judged worker's own compile,
a fraction of a second. Triton compiles on the first call, for the GPU in hand and the argument types
of that call: it cannot be built without the GPU, and the first call's extra allowance covers it.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cudasmith.exec.jobs import Job, ProblemRef
from cudasmith.exec.prebuild import (
    BuildResult,
    build,
    build_target,
    default_build_workers,
    device_before_torch,
    needs_build,
    slow_build,
)
from cudasmith.tempdirs import owned_tempdir
from cudasmith.wording import plural

if TYPE_CHECKING:
    from cudasmith.harness.options import EvalOptions
    from cudasmith.harness.session import Judge
    from cudasmith.harness.verdict import Verdict
    from cudasmith.tasks.problem import Problem


def _source(path: Path) -> str:
    """The solution's source; a file that cannot be read builds nothing (the judge says what is wrong)."""
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


class BuildsAhead:
    """A pool of build workers for one problem's queue of solutions; a context manager (close() stops it).

    `start(paths)` queues the builds; `in_ready_order(paths)` yields the indices of `paths` in the order
    to judge them. The pool's threads are daemons: a build nobody waits for any more ends with the
    process (its sandboxed worker dies with its parent)."""

    def __init__(
        self, problem: Problem | ProblemRef, options: EvalOptions, workers: int | None = None
    ) -> None:
        """`problem`: loaded, or only read (ProblemRef.from_file: the builds start before the process
        imports torch); `workers`: builds at once (default: the cores a lane leaves, see exec.prebuild)."""
        self.problem = problem if isinstance(problem, ProblemRef) else ProblemRef.of(problem)
        self.options = options
        self.target = build_target([options.device])
        self.workers = default_build_workers(1) if workers is None else workers
        self.results: dict[str, BuildResult] = {}
        self._scratch = owned_tempdir("cudasmith-ahead-")
        self._lock = threading.Condition()
        self._queue: list[Job] = []
        self._waited: set[str] = set()  # sources whose solutions wait for their build
        self._started: set[str] = set()
        self._closed = False
        self._threads: list[threading.Thread] = []

    def start(self, paths: Sequence[Path]) -> None:
        """Queue the build of every solution that needs one, extension builds first (call it once). A lone
        solution's NVRTC or C build is left to its judged worker: nothing would be judged meanwhile."""
        jobs = []
        for path in paths if self.workers > 0 else ():
            source = _source(path)
            if (
                not needs_build(source)
                or source in self._started
                or (len(paths) == 1 and not slow_build(source))
            ):
                continue
            self._started.add(source)
            if slow_build(source):
                self._waited.add(source)
            jobs.append(Job(path.name, self.problem, self.options, source, path.name, str(path.resolve())))
        jobs.sort(key=lambda job: not slow_build(job.source))
        with self._lock:
            self._queue += jobs
            self._lock.notify_all()
        for _ in range(min(self.workers, len(jobs))):
            thread = threading.Thread(target=self._serve, name="cudasmith-build-ahead", daemon=True)
            self._threads.append(thread)
            thread.start()

    def serves(self, problem: Problem, options: EvalOptions) -> bool:
        """Whether these builds are the ones `problem`'s judge session on `options.device` would want: sent
        before the problem was loaded, they were made for the file read then and the device guessed then."""
        return self.problem == ProblemRef.of(problem) and self.target == build_target([options.device])

    def _serve(self) -> None:
        while True:
            with self._lock:
                if self._closed or not self._queue:
                    return
                job = self._queue.pop(0)
            try:
                result = build(job, self._scratch, self.target)
            except Exception as exc:  # a build is only ever a head start: the judged worker builds itself
                result = BuildResult(False, 0.0, f"{type(exc).__name__}: {exc}")
            with self._lock:
                self.results[job.source] = result
                self._lock.notify_all()

    def _ready(self, source: str) -> bool:
        return source not in self._waited or source in self.results or self._closed

    def in_ready_order(
        self, paths: Sequence[Path], waiting: Callable[[int], None] | None = None
    ) -> Iterator[int]:
        """Indices into `paths`: the first ready one each time, waiting only while none is ready;
        `waiting(n)` is told, once before each wait, how many of the rest wait for their build."""
        sources = [_source(path) for path in paths]
        pending = list(range(len(paths)))
        while pending:
            with self._lock:
                told = False  # once a wait: another build's end wakes it with nothing new to say
                while not (ready := [i for i in pending if self._ready(sources[i])]):
                    if waiting is not None and not told:
                        waiting(len(pending))
                        told = True
                    self._lock.wait()
            pending.remove(ready[0])
            yield ready[0]

    def close(self) -> None:
        """Drop the builds not started; those under way end with their worker's limit or this process."""
        with self._lock:
            self._closed = True
            self._queue.clear()
            self._lock.notify_all()
        shutil.rmtree(self._scratch, ignore_errors=True)

    def __enter__(self) -> BuildsAhead:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def builds_before_loading(
    problem_file: Path, name: str | None, device: str | None, solutions: Sequence[Path]
) -> BuildsAhead | None:
    """Send the builds of `solutions` before the problem is loaded and torch imported (seconds on a GPU
    machine, while an extension build takes tens): the problem as read from `problem_file` under `name`
    (None: the file's stem), the device as named, or guessed (exec.prebuild.device_before_torch). None
    where the device cannot be told yet. The caller checks `serves()` once the problem is loaded and the
    options resolved, and closes the pool."""
    guessed = device_before_torch(device)
    if guessed is None:
        return None
    from cudasmith.harness.options import EvalOptions

    ahead = BuildsAhead(ProblemRef.from_file(problem_file, name), EvalOptions(device=guessed))
    ahead.start(solutions)
    return ahead


def judge_built_ahead(
    judge: Judge,
    solutions: Sequence[str | Path],
    workers: int | None = None,
    ahead: BuildsAhead | None = None,
) -> Iterator[Verdict]:
    """Judge `solutions` in `judge`'s session with their builds sent ahead; verdicts in the order given.
    `workers`: builds at once; `ahead`: a pool the caller started already (and closes)."""
    from cudasmith.harness.session import in_order

    return in_order(judged_as_done(judge, solutions, workers, ahead))


def judged_as_done(
    judge: Judge,
    solutions: Sequence[str | Path],
    workers: int | None = None,
    ahead: BuildsAhead | None = None,
) -> Iterator[tuple[int, Verdict]]:
    """Judge `solutions` with their builds sent ahead, and yield (index into `solutions`, verdict) as each
    is done: a solution waiting for its build holds back no other's verdict (a search's stream)."""
    paths = [Path(solution) for solution in solutions]
    with contextlib.ExitStack() as owned:
        if ahead is None:
            ahead = owned.enter_context(BuildsAhead(judge.problem, judge.options, workers))
            ahead.start(paths)
        order: list[int] = []
        timed_ahead = threading.Event()

        def queue() -> Iterator[Path]:
            assert ahead is not None
            progress = getattr(judge, "progress", None)

            def waiting(count: int) -> None:
                if progress is not None:
                    progress(f"waiting for {plural(count, 'build')} ahead", len(order), len(paths))
                # The GPU would idle until a build ends: the session's own timing (peaks, baselines) now.
                if (
                    not timed_ahead.is_set()
                    and (time_ahead := getattr(judge, "time_ahead", None)) is not None
                ):
                    timed_ahead.set()
                    threading.Thread(target=time_ahead, name="cudasmith-time-ahead", daemon=True).start()

            for index in ahead.in_ready_order(paths, waiting):
                order.append(index)
                yield paths[index]

        for position, verdict in judge.judge_as_done(queue()):
            yield order[position], verdict
