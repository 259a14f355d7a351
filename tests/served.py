"""A `cudasmith serve` for tests: started as a user starts it, in a process of its own, on 127.0.0.1 and a
free port (read from the line it prints once it listens), judging on the CPU unless told otherwise."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path

from conftest import PROBLEMS

# How long a server may take to start listening (it imports torch first).
START_S = 120.0
LISTENING = re.compile(r"listening on (http://\S+)")
# Options that keep CPU judging quick: no timing, one input set per config, a hanging call stopped after
# the judge's least default limit (5 s) and 5 s more for the first call, rather than 10: an honest call
# on a loaded two-core machine still fits.
QUICK = {"timing": False, "seeds": 1, "time_limit": 5.0, "first_call_extra": 5.0}
# The tiny CPU problem the candidates solve, sent as source.
PROBLEM = (PROBLEMS / "add_small.py").read_text()


class Server:
    """`cudasmith serve --device DEVICE --port 0 --store STORE ARGS…` (in `env`, default this process's);
    its stdout's lines in `lines`."""

    def __init__(
        self, store: Path, *args: str, device: str = "cpu", env: dict[str, str] | None = None
    ) -> None:
        self.log = store.parent / f"server-{os.urandom(3).hex()}.log"
        command = [sys.executable, "-m", "cudasmith", "serve", "--device", device, "--port", "0"]
        command += ["--store", str(store)]
        self.process = subprocess.Popen(
            [*command, *args], stdout=subprocess.PIPE, stderr=self.log.open("w"), text=True, env=env
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.printed: list[str] = []
        self.url = ""
        while not self.url:
            try:
                line = self.lines.get(timeout=START_S)
            except queue.Empty:
                self.kill()
                raise AssertionError(f"the server did not start: {self.log.read_text()[-2000:]}") from None
            if line is None:
                raise AssertionError(f"the server stopped: {self.log.read_text()[-2000:]}")
            self.printed.append(line)
            if found := LISTENING.search(line):
                self.url = found.group(1)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def said(self) -> str:
        """What it printed so far."""
        while not self.lines.empty():
            line = self.lines.get()
            if line is not None:
                self.printed.append(line)
        return "".join(self.printed)

    def kill(self) -> None:
        """kill -9: no chance to finish anything."""
        self.process.kill()
        self.process.wait(30)

    def stop(self) -> None:
        """Ctrl-C, as a user stops it."""
        if self.process.poll() is None:
            self.process.send_signal(2)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
