"""A worker process seen from the parent: spawn, ask, wait with a deadline, kill its whole process group."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from cudasmith.harness.walls.environment import TRUSTED_PATH_FLAGS, default_memory_limit, sweep, worker_env
from cudasmith.harness.walls.memory import over_limit
from cudasmith.harness.walls.output import OutputCapture
from cudasmith.harness.walls.scratch import Scratch
from cudasmith.harness.wire import protocol
from cudasmith.harness.wire.fields import JsonObject, MalformedMessage, to_wire
from cudasmith.harness.wire.messages import (
    Exit,
    Failed,
    Finish,
    LoadSolution,
    Ping,
    Prepare,
    Request,
    WorkerSetup,
    read_reply,
    request_header,
)
from cudasmith.harness.wire.status import Rule, Status

# After asking a worker to exit, how long to wait before killing it.
EXIT_GRACE_S = 2.0
# How long the supervisor may take to report and clean up once its worker is dead.
SUPERVISOR_GRACE_S = 10.0
# A wait for an answer wakes this often to take pauses into account (see WorkerProcess.pause).
WAIT_SLICE_S = 0.25
# Requests whose device work NVML's samples do not show (see WorkerProcess.device_work_in_flight).
_NO_DEVICE_WORK = (Ping, Prepare)


class WorkerFailure(Exception):
    """A request that got no proper answer: the worker timed out, died, or broke the protocol; the rule
    broken (by default the status's own)."""

    def __init__(
        self, status: Status, reason: str, over_memory: bool = False, rule: Rule | None = None
    ) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.rule = rule or Rule.of_status(status)
        # Killed for host memory over the worker's limit (the reason says so too).
        self.over_memory = over_memory


class WorkerProcess:
    """One worker, started under a supervisor (see supervisor.py), on pipes of the parent's choosing.

    The parent counts the messages it receives; the worker counts those it sends, and `finish()`
    compares the two, so a message forged onto the result pipe by candidate code is detected.
    """

    _ids = itertools.count(1)

    def __init__(
        self,
        setup: WorkerSetup,
        memory_limit: int | None = None,
        gpu_index: int | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        """`env`: variables set in the worker beyond this process's own (a build worker's targets)."""
        request_read, request_write = os.pipe()
        reply_read, reply_write = os.pipe()
        status_read, status_write = os.pipe()
        self.token = secrets.token_hex(16)
        self.role = setup.role
        self.started = time.monotonic()
        self.memory_limit = memory_limit or default_memory_limit()
        # Candidate code runs confined to a scratch folder of its own (scratch.py, sandbox.py), which is also
        # its working folder: what it (or a library for it) writes by a relative path lands there.
        self.scratch = None
        # The solution's copy in the scratch folder, as the worker names it (its messages, tracebacks).
        self.staged: str | None = None
        if self.role == "candidate":
            setup = replace(setup, problem=str(Path(setup.problem).resolve()))
            self.scratch = Scratch(Path(setup.problem), self.token)
        env = {**(env or {}), **(self.scratch.env() if self.scratch is not None else {})}
        worker_fds = f"{request_read},{reply_write}"
        self.process = subprocess.Popen(
            [sys.executable, *TRUSTED_PATH_FLAGS, "-m", "cudasmith.harness.walls.supervisor", str(status_write),
             str(self.memory_limit), worker_fds, "--",
             sys.executable, *TRUSTED_PATH_FLAGS, "-m", "cudasmith.harness.workers.worker", str(request_read),
             str(reply_write)],
            pass_fds=(request_read, reply_write, status_write),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            cwd=self.scratch.root if self.scratch is not None else None,
            env=worker_env(self.token, self.role, setup.defences, gpu_index, env),
        )  # fmt: skip
        for fd in (request_read, reply_write, status_write):
            os.close(fd)
        self.requests = Connection(request_write, readable=False)
        self.replies = Connection(reply_read, writable=False)
        self.stdout = OutputCapture(self.process.stdout)  # type: ignore[arg-type]
        self.stderr = OutputCapture(self.process.stderr)  # type: ignore[arg-type]
        self._status_lines: list[JsonObject] = []
        self._status_thread = threading.Thread(target=self._read_status, args=(status_read,), daemon=True)
        self._status_thread.start()
        self.received = 0
        self.stray = 0
        self.alive = True
        # Requests from several threads (the judge's worker is shared by the candidates in flight) are
        # answered one at a time: a request and its answer are never interleaved with another's.
        self._request_lock = threading.Lock()
        # Pauses (see pause()): the processes stopped now, since when, and the seconds paused before.
        self._pause_lock = threading.Lock()
        self._stopped: list[int] = []
        self._paused_at: float | None = None
        self._paused_before_s = 0.0
        # Each request sent and not yet answered, by id: what its answer must be (a worker with one is
        # busy, not idle, when it is paused: see device_work_in_flight).
        self._expected: dict[int, type] = {}
        # The worker's count of messages sent, as its last answer said (finish() compares it).
        self._worker_sent: object = None
        self._exit_asked = False
        protocol.send(self.requests, to_wire(replace(setup, token=self.token)))

    def _read_status(self, fd: int) -> None:
        with os.fdopen(fd) as status:
            for line in status:
                with contextlib.suppress(ValueError):
                    self._status_lines.append(json.loads(line))

    def status(self, key: str) -> Any:
        """A value the supervisor reported (worker_pid, network, filesystem, exit, over_memory…), or None."""
        return next((line[key] for line in self._status_lines if key in line), None)

    @property
    def device_work_in_flight(self) -> bool:
        """Whether a request sent and not yet read back could have queued work on the device that NVML's
        samples would show (what a timing hold waits out, see lease.Hold): any but a Ping, which a new
        worker answers once it has imported, before it has a CUDA context or any solution, and a Prepare,
        whose device work is the context and two one-element fills, microseconds that NVML's whole
        percentages of a sampling period show as 0 (on an H100, 8 of 16 holds of a stream waited
        103-156 ms for a spare's Prepare)."""
        return any(kind not in _NO_DEVICE_WORK for kind in tuple(self._expected.values()))

    def send(self, request: Request) -> int:
        """Send a request without waiting; returns its id."""
        request_id = next(self._ids)
        if isinstance(request, LoadSolution) and self.scratch is not None:
            landlock = str(self.status("filesystem") or "").startswith("landlock")
            staged, build = self.scratch.stage(Path(request.solution), landlock)
            self.staged = str(staged)
            request = replace(request, solution=self.staged, origin=request.solution, build=str(build))
        self._expected[request_id] = type(request)
        with contextlib.suppress(OSError):  # the worker is gone; wait() reports how
            protocol.send(self.requests, request_header(request, request_id))
        return request_id

    def _answered_within(self, timeout_s: float) -> bool:
        """Whether an answer arrives within `timeout_s` of the worker's own running time: the time it
        spends paused does not count against it."""
        started, paused_then = time.monotonic(), self.paused_s()
        while True:
            left = started + timeout_s + (self.paused_s() - paused_then) - time.monotonic()
            if left <= 0:
                return False
            if self.replies.poll(min(left, WAIT_SLICE_S)):
                return True

    def wait(self, request_id: int, timeout_s: float, what: str) -> Any:
        """The answer to one request, of the type its request names (messages.py), or messages.Failed;
        a WorkerFailure (after killing the worker) when none came or it is not one."""
        if not self._answered_within(timeout_s):
            self.kill()
            raise WorkerFailure(
                Status.TIMEOUT, f"no answer within {timeout_s:g} s while {what} (worker killed)"
            )
        try:
            header, _ = protocol.receive(self.replies)
        except EOFError:
            raise self._death(what) from None
        except protocol.ProtocolError as exc:
            self.kill()
            raise WorkerFailure(
                Status.REJECTED,
                f"garbage on the result channel while {what}: {exc}",
                rule=Rule.FORGED_RESULTS,
            ) from None
        self.received += 1
        if header.get("id") != request_id or request_id not in self._expected:
            self.kill()
            raise WorkerFailure(
                Status.REJECTED,
                f"an answer to a request never made arrived while {what}",
                rule=Rule.FORGED_RESULTS,
            )
        self._worker_sent = header.get("sent")
        try:
            return read_reply(self._expected.pop(request_id), header)
        except MalformedMessage as exc:
            self.kill()
            raise WorkerFailure(
                Status.REJECTED, f"a malformed answer while {what}: {exc}", rule=Rule.FORGED_RESULTS
            ) from None

    def request(self, request: Request, timeout_s: float, what: str) -> Any:
        """Send a request and wait for its answer (one request at a time, whichever thread asks)."""
        with self._request_lock:
            return self.wait(self.send(request), timeout_s, what)

    # -- pauses (see lease.py and pausing.py) -------------------------------------------------------

    def pause(self, pids: list[int]) -> None:
        """Stop these processes of the worker (SIGSTOP) until resume(); its calls' deadlines are extended
        by the pause. Called again, it stops more (those forked meanwhile)."""
        with self._pause_lock:
            if not self.alive:
                return
            if self._paused_at is None:
                self._paused_at = time.monotonic()
            for pid in pids:
                if pid not in self._stopped:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGSTOP)
                        self._stopped.append(pid)

    def resume(self) -> None:
        """Let the processes pause() stopped run again (SIGCONT)."""
        with self._pause_lock:
            if self._paused_at is None:
                return
            for pid in self._stopped:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
            self._paused_before_s += time.monotonic() - self._paused_at
            self._paused_at, self._stopped = None, []

    @property
    def paused(self) -> bool:
        return self._paused_at is not None

    @property
    def stopped(self) -> list[int]:
        """The processes of the worker stopped now."""
        return list(self._stopped)

    def paused_s(self) -> float:
        """Seconds this worker has spent paused, the pause under way included."""
        now_paused = self._paused_at
        return self._paused_before_s + (time.monotonic() - now_paused if now_paused is not None else 0.0)

    def ask_to_finish(self, within_s: float) -> int:
        """Send the Finish request now and give the worker up to `within_s` of its running time to answer
        (finish(asked=…) reads the answer): a session asks while its timing hold keeps the worker running,
        so that the answer is not held up by the next hold's pause. Returns the request's id."""
        request_id = self.send(Finish())
        self._answered_within(within_s)
        return request_id

    def finish(self, timeout_s: float, asked: int | None = None) -> None:
        """End the conversation: the worker's count of messages sent must equal ours of those received,
        and nothing may follow; raises WorkerFailure otherwise. `asked`: the id of a Finish request already
        sent (ask_to_finish), whose answer is waited for (`timeout_s`) instead of sending another."""
        with self._request_lock:
            reply = self.wait(self.send(Finish()) if asked is None else asked, timeout_s, "finishing")
        if self._worker_sent != self.received:
            self.kill()
            raise WorkerFailure(
                Status.REJECTED,
                f"{self.received} answers arrived but the worker sent {self._worker_sent}: forged results",
                rule=Rule.FORGED_RESULTS,
            )
        if isinstance(reply, Failed):
            self.kill()
            raise WorkerFailure(
                reply.verdict_status, reply.reason or "the worker refused to finish", rule=reply.verdict_rule
            )

    def _death(self, what: str) -> WorkerFailure:
        """Why the worker stopped answering, once the supervisor has reported."""
        self.kill()
        code = self.status("exit")
        if self.status("confinement_refused"):
            return WorkerFailure(
                Status.RUNTIME_ERROR,
                f"the judge could not confine the worker ({self.status('filesystem') or 'no mechanism'}): "
                "it did not run, nor anything of the solution",
                rule=Rule.INFRASTRUCTURE,
            )
        if code is None:
            return WorkerFailure(
                Status.REJECTED, f"the worker's supervisor was killed while {what}", rule=Rule.FORGED_RESULTS
            )
        if self.status("over_memory"):
            return WorkerFailure(
                Status.RUNTIME_ERROR,
                f"killed while {what}: {over_limit(self.memory_limit)}",
                over_memory=True,
            )
        if code < 0:
            name = signal.Signals(-code).name
            detail = " (segmentation fault)" if name == "SIGSEGV" else ""
            return WorkerFailure(
                Status.RUNTIME_ERROR, f"the worker died while {what}: killed by {name}{detail}"
            )
        last = [line for line in self.stderr.text().strip().splitlines() if line.strip()]
        hint = f"; last stderr line: {last[-1][:200]}" if last else ""
        return WorkerFailure(
            Status.REJECTED,
            f"the solution ended the worker (exit code {code}) while {what}{hint}",
            rule=Rule.EARLY_EXIT,
        )

    def terminate(self) -> None:
        """Kill the worker's processes now, from any thread: whoever waits for its answer hears that it
        died (kill() then cleans up)."""
        worker_pid = self.status("worker_pid")
        if self.alive and worker_pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(worker_pid, signal.SIGKILL)

    def kill(self) -> None:
        """Kill the worker and everything it started, and wait until they are gone."""
        if not self.alive:
            return
        self.alive = False
        worker_pid = self.wait_started()
        if worker_pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(worker_pid, signal.SIGKILL)
        try:
            self.process.wait(timeout=SUPERVISOR_GRACE_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self._status_thread.join(timeout=1.0)
        self.stray = sweep(self.token)
        # Here, not at the top: transfer imports torch, which a process that only builds ahead never needs.
        from cudasmith.harness.wire.transfer import sweep_shared

        sweep_shared(self.token)
        self.requests.close()
        self.replies.close()
        if self.scratch is not None:
            self.scratch.remove()

    def wait_started(self) -> int | None:
        """The worker's pid, once its supervisor has started it (None if the supervisor ended first)."""
        deadline = time.monotonic() + SUPERVISOR_GRACE_S
        while (
            self.status("worker_pid") is None and self.process.poll() is None and time.monotonic() < deadline
        ):
            time.sleep(0.01)
        return self.status("worker_pid")

    def ask_to_exit(self) -> None:
        """Ask the worker to exit, without waiting for it (close() waits, then kills): a session asks all
        its workers first, so that their exits (a CUDA context's teardown each) overlap."""
        if not self.alive or self._exit_asked:
            return
        self._exit_asked = True
        self.resume()  # a stopped worker cannot exit
        with contextlib.suppress(OSError):
            self.send(Exit())

    def close(self) -> None:
        """Ask the worker to exit; kill it and its descendants in any case."""
        if not self.alive:
            return
        self.ask_to_exit()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=EXIT_GRACE_S)
        self.kill()
