"""A worker: a fresh process, started under a supervisor, that answers one request at a time.

    python -m cudasmith.harness.workers.worker IN_FD OUT_FD

Two roles: `candidate` (candidate.py, the only process that ever imports a solution) and `reference`
(reference.py: reference outputs, comparisons, baselines). The first message (messages.WorkerSetup) says
which, with the problem; the worker imports torch and the problem at once, so a worker started ahead of
need is ready when its candidate arrives. Each request (messages.py) goes to its handler in the role's
table; the answer goes back as a JSON header, never a verdict, and the worker counts what it sends so
the parent can tell forged answers.
"""

from __future__ import annotations

import ctypes
import signal
import sys
from collections.abc import Callable
from multiprocessing.connection import Connection
from os import _exit
from typing import Any, Protocol

from cudasmith.errors import CompileError
from cudasmith.harness.wire import fields, protocol
from cudasmith.harness.wire.messages import Exit, Failed, WorkerSetup, read_request
from cudasmith.harness.workers.calls import CandidateFault, classify
from cudasmith.harness.workers.tracebacks import solution_traceback

PR_SET_PDEATHSIG = 1
# The end of a compiler's log that a verdict keeps (the first errors are at its start, so most fit).
COMPILE_LOG_CHARS = 20000
# The end of a traceback a reply carries.
TRACEBACK_CHARS = 4000
# Bound before candidate code runs (see tamper.py): the worker sends and reads with these, whatever is patched.
_send, _receive, _to_wire, _read_request = protocol.send, protocol.receive, fields.to_wire, read_request


class Role(Protocol):
    """A worker's state: its table of handlers, one per request type."""

    handlers: dict[type, Callable[[Any], Any]]


def _make(setup: WorkerSetup) -> Role:
    if setup.role == "candidate":
        from cudasmith.harness.workers.candidate import Candidate

        return Candidate(setup)
    from cudasmith.harness.workers.reference import ReferenceWorker

    return ReferenceWorker(setup)


def _failed(worker: Role, exc: BaseException, candidate: bool) -> Failed:
    """The answer to a request that raised: its status and reason, and what the candidate can act on."""
    explain = getattr(worker, "explain", None)
    fault = explain(exc) if explain is not None else classify(exc, None)
    tail = ""
    if not isinstance(exc, CandidateFault):  # the judge's own finding: its frames are the judge's
        tail = solution_traceback(exc, getattr(worker, "solution_path", None))[-TRACEBACK_CHARS:]
    log = exc.log[-COMPILE_LOG_CHARS:] if isinstance(exc, CompileError) and exc.log else ""
    # A reference worker that fails is the judge's problem, not a candidate's.
    return Failed(str(fault.status), str(fault), tail, log, harness=not candidate, rule=str(fault.rule or ""))


def serve(requests: Connection, replies: Connection) -> None:
    """Answer requests until told to exit or the parent goes away; count what is sent."""
    header, _ = _receive(requests)
    setup = fields.from_wire(WorkerSetup, header)
    worker = _make(setup)
    sent = 0
    while True:
        try:
            header, _ = _receive(requests)
        except EOFError:
            return
        try:
            request = _read_request(header)
            if isinstance(request, Exit):
                return
            answer = {"ok": True, **_to_wire(worker.handlers[type(request)](request))}
        except BaseException as exc:  # candidate code may raise anything, SystemExit included
            answer = {"ok": False, **_to_wire(_failed(worker, exc, setup.role == "candidate"))}
        sent += 1
        _send(replies, {"id": header.get("id"), "sent": sent, **answer})


def main() -> None:
    # If the supervisor dies (killed by candidate code, say), this process dies with it.
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    requests = Connection(int(sys.argv[1]), writable=False)
    replies = Connection(int(sys.argv[2]), readable=False)
    serve(requests, replies)
    replies.close()
    # Skip interpreter teardown: candidate objects' destructors have no business running after the answer.
    sys.stdout.flush()
    sys.stderr.flush()
    _exit(0)


if __name__ == "__main__":
    main()
