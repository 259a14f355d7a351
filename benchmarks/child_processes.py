"""Child processes of the throughput benchmarks: run one to its end or a limit, its pipes drained as it
runs, and read the JSON it printed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# After SIGTERM, a process group gets this long to clean up its workers before SIGKILL.
GRACE_S = 5.0


def run_process(
    command: list[str],
    env: dict[str, str],
    timeout_s: float,
    on_line: Callable[[str], None] | None = None,
) -> tuple[int | None, str, str, float]:
    """Run to the end or for timeout_s, then stop its process group (SIGTERM, then SIGKILL); rc None if
    stopped. Both pipes are drained by threads while it runs, so a chatty child never blocks on a full
    pipe, and `on_line` sees each stdout line as it comes."""
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    out: list[str] = []
    err: list[str] = []

    def drain(stream: Any, sink: list[str], callback: Callable[[str], None] | None) -> None:
        for line in stream:
            sink.append(line)
            if callback is not None:
                callback(line)

    readers = [
        threading.Thread(target=drain, args=(process.stdout, out, on_line), daemon=True),
        threading.Thread(target=drain, args=(process.stderr, err, None), daemon=True),
    ]
    for reader in readers:
        reader.start()
    rc: int | None
    try:
        rc = process.wait(timeout=max(timeout_s, 1.0))
    except subprocess.TimeoutExpired:
        rc = None
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    # A worker that left the group may still hold a pipe open: the output so far is enough.
    for reader in readers:
        reader.join(timeout=GRACE_S)
    return rc, "".join(out), "".join(err), time.monotonic() - started


def last_json(text: str) -> dict[str, Any] | None:
    """The JSON object a child printed: the whole text, else its last line that parses."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    for line in reversed(text.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return None


def tail(text: str, lines: int = 2) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])[:300]


def child_command(args: Any, folder: Path, mode: str, extra: list[str], names: list[str]) -> list[str]:
    """The command line of a child of throughput.py in stream mode (`mode`: --child-stream, …), for the
    stream in `folder`."""
    command = [sys.executable, str(Path(__file__).resolve().parent / "throughput.py"), mode]
    command += ["--device", args.device, "--baselines", args.baselines, "--candidates", str(folder)]
    return command + extra + names
