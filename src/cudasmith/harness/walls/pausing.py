"""Pausing workers for a timing window: which of their processes to stop, read from /proc once per pass.

A worker's processes are everything below its supervisor (which adopts orphans, so a double fork or a
new session escapes nothing). On the CPU every one of them is stopped; on the GPU only those that can
reach the GPU (the worker itself, and any holding one of the driver's device files), so that a compiler
a candidate runs while it is paused goes on building.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from cudasmith.harness.walls.process import WorkerProcess

# Passes over the process table, each after the processes the last one stopped show as stopped: a signal
# takes effect only when its process next runs, a fork under way completing first, so a child forked while
# one pass ran is in the table by then and is stopped by the next (a stopped process forks nothing). A
# tree still growing after this many passes is left to the window's check (witnesses/exclusive.py).
PAUSE_PASSES = 8
# A signal is delivered when its process next runs: how long to wait for every stopped process to show
# as stopped, and how often to look.
STOP_WAIT_S = 5.0
STOP_POLL_S = 0.001
# The device files of NVIDIA's driver: a process that holds one open can launch GPU work.
NVIDIA_DEVICE_PREFIX = "/dev/nvidia"


def process_tree() -> dict[int, list[int]]:
    """Each process's children, from one reading of /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = Path(f"/proc/{entry.name}/stat").read_text()
            # The command name may hold spaces and parentheses: fields start after the last ')'.
            parent = int(stat[stat.rfind(")") + 2 :].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    return children


def worker_processes(worker: WorkerProcess, tree: dict[int, list[int]] | None = None) -> list[int]:
    """Every process below the worker's supervisor: the worker and all it started."""
    tree = process_tree() if tree is None else tree
    found, frontier = [], [worker.process.pid]
    while frontier:
        below = [child for parent in frontier for child in tree.get(parent, [])]
        found += below
        frontier = below
    return found


def holds_gpu(pid: int) -> bool:
    """Whether a process has one of the GPU driver's device files open (so it can run GPU work)."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                if os.readlink(entry.path).startswith(NVIDIA_DEVICE_PREFIX):
                    return True
    return False


def _running(pid: int) -> bool:
    """Whether a process exists and is not stopped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "TtZX"


def pause_workers(workers: list[WorkerProcess], gpu_only: bool) -> None:
    """Stop the workers' processes (with `gpu_only`, the worker itself and those holding the GPU), and
    return once every one of them shows as stopped."""
    deadline = time.monotonic() + STOP_WAIT_S
    try:
        _stop(workers, gpu_only, deadline)
    finally:
        _wait_stopped(workers, deadline)


def _wait_stopped(workers: list[WorkerProcess], deadline: float) -> None:
    """Return once every process the workers stopped shows as stopped (or gone), or at `deadline`."""
    pending = [pid for worker in workers for pid in worker.stopped]
    while (pending := [pid for pid in pending if _running(pid)]) and time.monotonic() < deadline:
        time.sleep(STOP_POLL_S)


def _stop(workers: list[WorkerProcess], gpu_only: bool, deadline: float) -> None:
    for _ in range(PAUSE_PASSES):
        _wait_stopped(workers, deadline)  # what the last pass stopped has finished its forks
        tree = process_tree()
        stopped_more = False
        for worker in workers:
            own = worker.status("worker_pid")
            found = [
                pid
                for pid in worker_processes(worker, tree)
                if pid not in worker.stopped and (not gpu_only or pid == own or holds_gpu(pid))
            ]
            if found:
                worker.pause(found)
                stopped_more = True
        if not stopped_more:
            return
