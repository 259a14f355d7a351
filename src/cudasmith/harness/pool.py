"""Candidate workers started ahead of need, each used for exactly one candidate.

Starting a worker (a process, torch imported, the problem loaded) takes seconds and making its CUDA
context most of one more; a session does both while earlier candidates are judged, so neither is on a
candidate's critical path. A worker on its way is a candidate worker like any other for the timing
lease: a timing window pauses it (lease.py), so its start never slows a timed call. The pool is shared
by the candidates in flight, from several threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from cudasmith.harness.messages import Failed, Ping, Prepare
from cudasmith.harness.process import WorkerFailure, WorkerProcess
from cudasmith.harness.verdict import Status

# A worker's imports and CUDA context: how long to wait for them before giving up on that worker.
START_TIMEOUT_S = 120.0


@dataclass
class _Starting:
    """A worker on its way: its ping is answered once imported; its prepare once its context exists."""

    worker: WorkerProcess
    ping: int
    ping_done: bool = False
    prepare: int | None = None
    prepare_done: bool = False


class WorkerPool:
    """Keeps `size` candidate workers starting or ready; `take()` hands out a prepared one."""

    def __init__(self, start: Callable[[], WorkerProcess], size: int, limit: int | None = None) -> None:
        """`limit`: how many workers will ever be needed, when known (none is started beyond it)."""
        self._start = start
        self.size = size
        self.limit = limit
        self.started = 0
        self._workers: list[_Starting] = []
        self.failures: list[str] = []
        self._lock = threading.Lock()

    def _spawn(self) -> _Starting:
        worker = self._start()
        self.started += 1
        return _Starting(worker, ping=worker.send(Ping()))

    def top_up(self) -> None:
        """Start workers until `size` are on their way (or `limit` were started)."""
        with self._lock:
            while len(self._workers) < self.size and (self.limit is None or self.started < self.limit):
                self._workers.append(self._spawn())

    def _step(self, entry: _Starting, block: bool) -> None:
        """Move one worker on: read its ping, send its prepare, read that; never blocks unless asked."""
        worker = entry.worker
        if not entry.ping_done and (block or worker.replies.poll(0)):
            worker.wait(entry.ping, START_TIMEOUT_S, "starting a worker")
            entry.ping_done = True
        if entry.ping_done and entry.prepare is None:
            entry.prepare = worker.send(Prepare())
        if entry.prepare is not None and not entry.prepare_done and (block or worker.replies.poll(0)):
            reply = worker.wait(entry.prepare, START_TIMEOUT_S, "preparing a worker")
            if isinstance(reply, Failed):
                raise WorkerFailure(
                    Status.parse(reply.status, Status.RUNTIME_ERROR), reply.reason or "prepare failed"
                )
            entry.prepare_done = True

    def advance(self) -> None:
        """Move every worker on as far as it can go now, without waiting for any."""
        with self._lock:
            for entry in list(self._workers):
                try:
                    self._step(entry, block=False)
                except WorkerFailure as failure:
                    self._drop(entry, str(failure))

    def take(self) -> WorkerProcess:
        """A prepared worker, waiting for one if none is ready yet (the others go on starting)."""
        while True:
            with self._lock:
                if not self._workers:
                    self._workers.append(self._spawn())
                entry = next((e for e in self._workers if e.prepare_done), self._workers[0])
                self._workers.remove(entry)
            try:
                self._step(entry, block=True)
                return entry.worker
            except WorkerFailure as failure:
                with self._lock:
                    self._drop(entry, str(failure))
                    if len(self.failures) >= 3:
                        raise

    def _drop(self, entry: _Starting, why: str) -> None:
        """Close a worker that failed to start (the caller holds the lock)."""
        if entry in self._workers:
            self._workers.remove(entry)
        entry.worker.close()
        self.failures.append(why)

    def ask_to_exit(self) -> None:
        """Ask every worker not taken to exit (close() waits for them)."""
        with self._lock:
            for entry in self._workers:
                entry.worker.ask_to_exit()

    def close(self) -> None:
        with self._lock:
            for entry in self._workers:
                entry.worker.close()
            self._workers.clear()
