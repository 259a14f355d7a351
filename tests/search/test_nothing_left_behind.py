"""A driver killed with SIGKILL in the middle of its work leaves no process behind: every supervisor,
warm worker, reference worker and build worker it started ends within KILL_GRACE_S.

The run's processes are found by a marker in the driver's environment, which every process it starts
inherits (workers get the driver's environment less secrets)."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_optimize import FAST, answer, environment, fenced, server  # noqa: F401 (a fixture)

from cudasmith.store import RunStore

from conftest import PROBLEMS, SOLUTIONS, interruptible
from fake_llm import FakeLLMServer, Reply

MARK_ENV = "CUDASMITH_TEST_RUN_MARK"
# The bound: every process of a killed run is gone this long after the kill.
KILL_GRACE_S = 10.0
# How long a run may take to reach the middle of its work on a loaded two-core machine.
START_S = 300.0
# Processes of a run at work: the driver, a supervisor and its worker at least.
BUSY_PROCESSES = 3
# From then until the kill: into the middle of a candidate (loaded, called), not the instant its worker appears.
IN_THE_MIDDLE_S = 8.0


def marked(mark: str) -> list[int]:
    """Every live process whose environment carries the mark (zombies excluded)."""
    needle = f"{MARK_ENV}={mark}".encode()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry.name}/environ").read_bytes()
            state = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def kill_in_the_middle(
    command: list[str], env: dict[str, str], sig: signal.Signals = signal.SIGKILL, stderr: Path | None = None
) -> list[int]:
    """Start the driver, send it `sig` once its workers are busy (its stderr into `stderr`); the run's
    processes alive KILL_GRACE_S after it ended."""
    mark = secrets.token_hex(8)
    with open(stderr or os.devnull, "w") as errors:
        driver = subprocess.Popen(
            command,
            env={**env, MARK_ENV: mark},
            stdout=subprocess.DEVNULL,
            stderr=errors,
            preexec_fn=interruptible,
        )
    deadline = time.monotonic() + START_S
    while len(marked(mark)) < BUSY_PROCESSES:
        assert driver.poll() is None and time.monotonic() < deadline, "the run ended before it was killed"
        time.sleep(0.2)
    time.sleep(IN_THE_MIDDLE_S)
    driver.send_signal(sig)
    driver.wait(timeout=KILL_GRACE_S)
    killed_at = time.monotonic()
    while (left := marked(mark)) and time.monotonic() - killed_at < KILL_GRACE_S:
        time.sleep(0.2)
    for pid in left:  # do not leave them to the next test either
        os.kill(pid, signal.SIGKILL)
    return left


def bench_command(tmp_path: Path) -> list[str]:
    folder = tmp_path / "solutions" / "level1" / "vector_add"
    folder.mkdir(parents=True)
    # The worker stuck in its forward never reads its pipe again: only its supervisor can end it.
    for name in ("loops_forever.py", "vector_add_cpu.py"):
        shutil.copy(SOLUTIONS / name, folder / name)
    command = [sys.executable, "-m", "cudasmith", "bench", str(tmp_path / "solutions"), "--device", "cpu"]
    return [*command, "--seeds", "1", "--no-timing", "--store", str(tmp_path / "runs.db")]


@pytest.mark.slow
def test_sigkill_of_bench_leaves_no_process(tmp_path: Path) -> None:
    assert kill_in_the_middle(bench_command(tmp_path), dict(os.environ)) == []


@pytest.mark.slow
def test_ctrl_c_of_bench_says_how_to_resume_and_leaves_no_process(tmp_path: Path) -> None:
    stderr = tmp_path / "stderr.txt"
    assert kill_in_the_middle(bench_command(tmp_path), dict(os.environ), signal.SIGINT, stderr) == []
    [line] = [line for line in stderr.read_text().splitlines() if "resume with" in line]
    said = re.fullmatch(
        r"stopped bench (\S+): (\d)/2 judged; resume with `cudasmith bench --resume \1` .*", line
    )
    assert said is not None, line
    # The honest candidate may have been judged before the interrupt (its verdict is kept); the one stuck in
    # its forward cannot have been: its call's time limit is longer than the run lived. The count is the store's.
    with RunStore(tmp_path / "runs.db") as store:
        judged = [c.path for c in store.candidates(said.group(1)) if c.verdict is not None]
    assert int(said.group(2)) == len(judged) and not any("loops_forever" in str(path) for path in judged)


@pytest.mark.slow
def test_sigkill_of_optimize_leaves_no_process(server: FakeLLMServer, tmp_path: Path) -> None:  # noqa: F811
    forever = (SOLUTIONS / "loops_forever.py").read_text()
    server.push(answer(fenced(forever)), answer(fenced(FAST)), Reply(hang=True))
    command = [sys.executable, "-m", "cudasmith", "optimize", "--problem", str(PROBLEMS / "add_small.py")]
    command += ["-m", "openai:fake-coder", "-n", "3", "--depth", "2", "--device", "cpu", "--seeds", "1"]
    command += ["--no-timing", "--store", str(tmp_path / "runs.db")]
    assert kill_in_the_middle(command, environment(server)) == []
