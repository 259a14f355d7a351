"""Candidate workers started ahead of need, each used for exactly one candidate.

Starting a worker (a process, torch imported, the problem loaded) takes seconds and making its CUDA
context most of one more; a session does both while earlier candidates are judged, so neither is on a
candidate's critical path. A worker on its way is a candidate worker like any other for the timing
lease: a timing window pauses it (lease.py), so its start never slows a timed call. The pool is shared
by the candidates in flight, from several threads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from cudasmith.harness.walls.process import WorkerFailure, WorkerProcess
from cudasmith.harness.wire.messages import Calibrate, Failed, Ping, Prepare
from cudasmith.harness.wire.status import Status
from cudasmith.harness.witnesses.bracket import Calibration
from cudasmith.timing.protocol import TimingPlan

# A worker's imports and CUDA context: how long to wait for them before giving up on that worker.
START_TIMEOUT_S = 120.0
# Candidate workers of one GPU making their CUDA context (and loading the timing tools) at once, over
# every session of the process. Contexts are made largely one after another by the driver: when a
# session starts K workers and another session K more, each of the first candidates waited for all of
# them (14 s on the H100 machine for 16 workers). Beyond this many, a worker's prepare waits its turn,
# so the first ones are ready first; its imports go on meanwhile.
PREPARES_AT_ONCE = 4
# A prepare never waits for its turn longer than this (a turn is freed when a prepare is answered).
PREPARE_TURN_WAIT_S = 30.0
POLL_S = 0.02


class PrepareGate:
    """Turns to prepare (make a CUDA context) among the candidate workers of one GPU. A turn ends when the
    worker's answer has arrived (seen without reading it, so any thread may notice) or it is gone."""

    def __init__(self, turns: int = PREPARES_AT_ONCE) -> None:
        self.turns = turns
        self._holders: list[WorkerProcess] = []
        self._lock = threading.Lock()

    def _free(self) -> None:
        """Drop the holders whose prepare has been answered, or that died (the caller holds the lock)."""
        self._holders = [w for w in self._holders if w.alive and not _answered(w)]

    def enter(self, worker: WorkerProcess, block: bool) -> bool:
        """A turn for `worker`: at once, False if none is free and not `block`; waits otherwise (at most
        PREPARE_TURN_WAIT_S, then goes ahead anyway)."""
        deadline = time.monotonic() + PREPARE_TURN_WAIT_S
        while True:
            with self._lock:
                self._free()
                if len(self._holders) < self.turns or (block and time.monotonic() >= deadline):
                    self._holders.append(worker)
                    return True
            if not block:
                return False
            time.sleep(POLL_S)

    def leave(self, worker: WorkerProcess) -> None:
        with self._lock:
            self._holders = [w for w in self._holders if w is not worker]

    @property
    def held(self) -> int:
        with self._lock:
            self._free()
            return len(self._holders)


def _answered(worker: WorkerProcess) -> bool:
    try:
        return bool(worker.replies.poll(0))
    except (OSError, ValueError):  # closed meanwhile: its turn is over
        return True


@dataclass
class _Starting:
    """A worker on its way: its ping is answered once imported; its prepare once its context exists; its
    calibration once it has timed the judge's empty calls."""

    worker: WorkerProcess
    ping: int
    ping_done: bool = False
    prepare: int | None = None
    prepare_done: bool = False
    call_thread: int | None = None
    calibrate: int | None = None
    calibration: Calibration | None = None

    @property
    def ready(self) -> bool:
        return self.prepare_done and (self.calibrate is None or self.calibration is not None)


class WorkerPool:
    """Keeps `size` candidate workers starting or ready; `take()` hands out a prepared one."""

    def __init__(
        self,
        start: Callable[[], WorkerProcess],
        size: int,
        limit: int | None = None,
        gate: PrepareGate | None = None,
        calibrate: TimingPlan | None = None,
    ) -> None:
        """`limit`: how many workers will ever be needed, when known (none is started beyond it); `gate`:
        the GPU's turns to prepare (none on the CPU); `calibrate`: the plan each worker times the judge's empty
        calls by once prepared (bracket.calibration_plan), where the parent's clock will check its timing."""
        self._start = start
        self.size = size
        self.limit = limit
        self.gate = gate
        self.calibrate = calibrate
        self.started = 0
        self._workers: list[_Starting] = []
        self.failures: list[str] = []
        # What each worker handed out measured of its calls' costs before its solution loaded.
        self.calibrations: dict[WorkerProcess, Calibration] = {}
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
            if self.gate is not None and not self.gate.enter(worker, block):
                return  # its turn comes later
            entry.prepare = worker.send(Prepare())
        if entry.prepare is not None and not entry.prepare_done and (block or worker.replies.poll(0)):
            try:
                reply = worker.wait(entry.prepare, START_TIMEOUT_S, "preparing a worker")
            finally:
                if self.gate is not None:
                    self.gate.leave(worker)
            if isinstance(reply, Failed):
                raise WorkerFailure(
                    Status.parse(reply.status, Status.RUNTIME_ERROR), reply.reason or "prepare failed"
                )
            entry.prepare_done, entry.call_thread = True, reply.call_thread
        if entry.prepare_done and self.calibrate is not None and entry.calibrate is None:
            entry.calibrate = worker.send(Calibrate(self.calibrate))
        if entry.calibrate is not None and entry.calibration is None and (block or worker.replies.poll(0)):
            answer = worker.wait(entry.calibrate, START_TIMEOUT_S, "calibrating a worker")
            if isinstance(answer, Failed):
                raise WorkerFailure(Status.parse(answer.status, Status.RUNTIME_ERROR), answer.reason)
            entry.calibration = Calibration.of(answer, entry.call_thread)

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
                ready = (e for e in self._workers if e.ready)
                preparing = (e for e in self._workers if e.prepare is not None)
                entry = next(ready, next(preparing, self._workers[0]))
                self._workers.remove(entry)
            try:
                self._step(entry, block=True)
                if entry.calibration is not None:
                    with self._lock:
                        self.calibrations[entry.worker] = entry.calibration
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
        if self.gate is not None:
            self.gate.leave(entry.worker)
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
