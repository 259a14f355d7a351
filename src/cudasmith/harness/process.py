"""A worker process seen from the parent: spawn, ask, wait with a deadline, kill its whole process group."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import IO, Any

import torch

from cudasmith.harness import protocol

# Output kept from a worker's stdout and stderr: its start and its end (the rest is counted, not kept).
OUTPUT_HEAD_BYTES = 4 * 1024
OUTPUT_TAIL_BYTES = 16 * 1024
# After asking a worker to exit, how long to wait before killing it.
EXIT_GRACE_S = 2.0
# Environment variables that look like credentials never reach candidate code.
SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.I)


class WorkerFailure(Exception):
    """A request that got no proper answer: the worker timed out, died, or broke the protocol."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status


class OutputCapture:
    """Drains one pipe on a thread (a worker never blocks on a full pipe), keeping its head and tail."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self._thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._thread.start()

    def _drain(self, stream: IO[bytes]) -> None:
        while chunk := stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536):
            self.total += len(chunk)
            if len(self.head) < OUTPUT_HEAD_BYTES:
                self.head += chunk[: OUTPUT_HEAD_BYTES - len(self.head)]
            self.tail += chunk
            del self.tail[:-OUTPUT_TAIL_BYTES]
        stream.close()

    def text(self) -> str:
        """What was kept, with a marker where bytes were dropped."""
        self._thread.join(timeout=1.0)
        head, tail = bytes(self.head), bytes(self.tail)
        overlap = len(head) + len(tail) - self.total
        if overlap >= 0:
            return (head + tail[overlap:]).decode(errors="replace")
        return f"{head.decode(errors='replace')}\n[… {-overlap} bytes not kept …]\n{tail.decode(errors='replace')}"


def _worker_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not SECRET_ENV.search(k)}
    env["CUDASMITH_WORKER"] = "1"
    # The worker imports cudasmith from wherever this process did (an uninstalled checkout included).
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    return env


class WorkerProcess:
    """One spawned worker: its own session and process group, pipes of the parent's choosing."""

    _ids = itertools.count(1)

    def __init__(self, setup: dict[str, Any]) -> None:
        request_read, request_write = os.pipe()
        reply_read, reply_write = os.pipe()
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cudasmith.harness.worker", str(request_read), str(reply_write)],
            pass_fds=(request_read, reply_write),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=_worker_env(),
        )
        os.close(request_read)
        os.close(reply_write)
        self.requests = Connection(request_write, readable=False)
        self.replies = Connection(reply_read, writable=False)
        self.stdout = OutputCapture(self.process.stdout)  # type: ignore[arg-type]
        self.stderr = OutputCapture(self.process.stderr)  # type: ignore[arg-type]
        self.role = setup["role"]
        self.alive = True
        protocol.send(self.requests, setup)

    def send(self, header: dict[str, Any]) -> int:
        """Send a request without waiting; returns its id."""
        request_id = next(self._ids)
        with contextlib.suppress(OSError):  # the worker is gone; wait() reports how
            protocol.send(self.requests, {**header, "id": request_id})
        return request_id

    def wait(self, request_id: int, timeout_s: float, what: str) -> tuple[dict[str, Any], list[torch.Tensor]]:
        """The answer to one request, or a WorkerFailure after killing the worker."""
        if not self.replies.poll(timeout_s):
            self.kill()
            raise WorkerFailure("timeout", f"no answer within {timeout_s:g} s while {what} (worker killed)")
        try:
            header, tensors = protocol.receive(self.replies)
        except EOFError:
            raise WorkerFailure("runtime_error", f"the worker died while {what}: {self._death()}") from None
        except protocol.ProtocolError as exc:
            self.kill()
            raise WorkerFailure("rejected", f"garbage on the result channel while {what}: {exc}") from None
        if header.get("id") != request_id:
            self.kill()
            raise WorkerFailure("rejected", f"an answer to a request never made arrived while {what}")
        return header, tensors

    def request(
        self, header: dict[str, Any], timeout_s: float, what: str
    ) -> tuple[dict[str, Any], list[Any]]:
        """Send a request and wait for its answer."""
        return self.wait(self.send(header), timeout_s, what)

    def _death(self) -> str:
        try:
            code = self.process.wait(timeout=EXIT_GRACE_S)
        except subprocess.TimeoutExpired:
            self.kill()
            return "it closed its result channel and hung (killed)"
        self.kill()
        if code < 0:
            name = signal.Signals(-code).name
            return f"killed by {name}" + (" (segmentation fault)" if name == "SIGSEGV" else "")
        last = [line for line in self.stderr.text().strip().splitlines() if line.strip()]
        hint = f"; last stderr line: {last[-1][:200]}" if last else ""
        return f"exit code {code} before answering{hint}"

    def kill(self) -> None:
        """Kill the worker's whole process group (anything it spawned that stayed in the group goes too)."""
        if self.alive:
            self.alive = False
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            self.requests.close()
            self.replies.close()

    def close(self) -> None:
        """Ask the worker to exit; kill it if it does not."""
        if not self.alive:
            return
        try:
            protocol.send(self.requests, {"op": "exit"})
            self.process.wait(timeout=EXIT_GRACE_S)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()
