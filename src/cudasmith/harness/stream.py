"""Feeding a judge session: candidates taken from an iterable (`judge_as_done`), or submitted one at a time
as they come (`Submissions`, behind `Judge.submit`). Either way `in_flight` are judged at once, each by a
thread of its own calling the session's thread-safe `judge`.

    with Judge(task="level1/softmax", device="cuda") as judge:
        futures = [judge.submit(code) for code in sources]      # source text, or a solution file
        verdicts = [future.result() for future in futures]
"""

from __future__ import annotations

import queue
import shutil
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Protocol, TypeVar

from cudasmith.harness.verdict import Verdict
from cudasmith.tasks.problem import solution_file as checked_solution_file
from cudasmith.tempdirs import owned_tempdir

# Solutions taken from the caller's iterable beyond the verdicts yielded, per candidate in flight: a
# slow candidate never idles the rest. How often a feeder waiting for room looks whether to stop.
FEED_AHEAD = 2
FEED_POLL_S = 0.1

Item = TypeVar("Item")


class Session(Protocol):
    """What feeding needs of a judge session: how many candidates it judges at once, and `judge`, which
    may be called from that many threads at once."""

    in_flight: int

    def judge(self, solution: str | Path) -> Verdict: ...


def in_order(pairs: Iterable[tuple[int, Item]]) -> Iterator[Item]:
    """Items given as (position, item) in any order, yielded in the order of their positions (0, 1, …)."""
    held: dict[int, Item] = {}
    given = 0
    for position, item in pairs:
        held[position] = item
        while given in held:
            yield held.pop(given)
            given += 1


def solution_file(code: str | Path) -> Path | None:
    """The file a candidate names, or None when `code` is the candidate's source text. A `Path` is a file;
    a `str` is a file's path when it is one line naming an existing file (or ending in `.py`: then a
    missing file is an error, not a one-line solution), else source text. A file named is checked as
    every command checks one (tasks.problem.solution_file)."""
    if isinstance(code, Path) or ("\n" not in code and (code.endswith(".py") or Path(code).is_file())):
        return checked_solution_file(code)
    return None


def _deliver(
    verdicts: queue.Queue[tuple[int, Future[Verdict]] | int], position: int, done: Future[Verdict]
) -> None:
    verdicts.put((position, done))


def judge_as_done(session: Session, solutions: Iterable[str | Path]) -> Iterator[tuple[int, Verdict]]:
    """Judge the solutions, `in_flight` at once, and yield (position in `solutions`, verdict) as each is
    done. A thread of its own takes the solutions from `solutions`, at most FEED_AHEAD × in_flight beyond
    the verdicts yielded: an iterable that waits (for a build ahead) holds back no verdict."""
    verdicts: queue.Queue[tuple[int, Future[Verdict]] | int] = queue.Queue()
    room = threading.Semaphore(FEED_AHEAD * session.in_flight)
    stopping = threading.Event()
    failures: list[BaseException] = []
    threads = ThreadPoolExecutor(session.in_flight, thread_name_prefix="cudasmith-candidate")

    def feed() -> None:
        fed = 0
        try:
            for position, solution in enumerate(solutions):
                while not room.acquire(timeout=FEED_POLL_S):
                    if stopping.is_set():
                        return
                if stopping.is_set():
                    return
                future = threads.submit(session.judge, solution)
                future.add_done_callback(partial(_deliver, verdicts, position))
                fed += 1
        except BaseException as exc:  # the iterable's failure is the caller's, raised where it reads
            failures.append(exc)
        finally:
            verdicts.put(fed)  # how many were fed: the reader stops after that many verdicts

    feeder = threading.Thread(target=feed, name="cudasmith-feeder", daemon=True)
    feeder.start()
    try:
        fed, given = None, 0
        while fed is None or given < fed:
            item = verdicts.get()
            if isinstance(item, int):
                fed = item
                continue
            position, future = item
            given += 1
            room.release()
            yield position, future.result()
        if failures:  # after the verdicts of the solutions it gave
            raise failures[0]
    finally:
        stopping.set()
        threads.shutdown(wait=True, cancel_futures=True)


class Submissions:
    """Candidates submitted to a session one at a time: each given as source text is written to a file of
    its own (in a folder the session removes when it closes), and judged by the first of `in_flight`
    threads to be free, in the order submitted."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._threads = ThreadPoolExecutor(session.in_flight, thread_name_prefix="cudasmith-submitted")
        self._lock = threading.Lock()
        self._folder: Path | None = None
        self._written = 0

    def submit(self, code: str | Path) -> Future[Verdict]:
        """Queue one candidate; its future holds the verdict (or the judge's own failure)."""
        path = solution_file(code) or self._write(str(code))
        return self._threads.submit(self._session.judge, path)

    def _write(self, source: str) -> Path:
        with self._lock:
            if self._folder is None:
                self._folder = owned_tempdir("cudasmith-submitted-")
            self._written += 1
            path = self._folder / f"submitted_{self._written}.py"
        path.write_text(source)
        return path

    def cancel(self) -> None:
        """Cancel the candidates not yet taken (their futures say so); those being judged go on."""
        self._threads.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Wait for the candidates being judged, then remove the files written."""
        self._threads.shutdown(wait=True, cancel_futures=True)
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
