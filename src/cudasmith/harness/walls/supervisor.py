"""The supervisor: the worker's parent, so that nothing the candidate starts outlives it.

    python -m cudasmith.harness.walls.supervisor STATUS_FD MEMORY_LIMIT_BYTES PASSED_FDS -- WORKER_ARGV...

PASSED_FDS (comma-separated) are the worker's pipe ends, handed on to the worker and closed here.

It makes itself a child subreaper (orphaned descendants of the worker are re-parented to it, even
after setsid or a double fork), moves into a network namespace of its own where the OS allows it,
starts the worker in a new session, confined to its files where a policy came with it (sandbox.py; where
the parent requires it and no mechanism confines the worker, the worker is not started at all),
polls the memory of every descendant and kills the lot over the limit, and when the worker ends kills
every descendant left. It reports on STATUS_FD as JSON lines: first the worker's pid and the states of
its network and filesystem, last the worker's exit and what was killed.
This module imports nothing heavy: it starts in tens of milliseconds.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from cudasmith.harness.walls import sandbox

PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1
# The pid of the process that started this supervisor (the driver), set in its environment: if that
# process is gone before the parent-death signal is armed, the signal would never come.
PARENT_ENV = "CUDASMITH_SUPERVISOR_PARENT"
# A niceness the worker and all it starts run at (a build ahead that is only a head start, see
# exec/prebuild.py): the CPU goes to the judged workers first.
NICE_ENV = "CUDASMITH_WORKER_NICE"
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
# How often descendants' memory is measured.
MEMORY_POLL_S = 0.2
# After the worker ends, how long to keep killing descendants that keep appearing (a fork bomb).
CLEANUP_S = 5.0
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def isolate_network() -> str:
    """Leave the host's network: a fresh network namespace has no interface but a down loopback."""
    libc = _libc()
    if libc.unshare(CLONE_NEWNET) == 0:
        return "isolated"
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0:
        with contextlib.suppress(OSError):  # keep our own uid/gid inside the user namespace
            Path("/proc/self/setgroups").write_text("deny")
            Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
            Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
        return "isolated"
    return f"not isolated ({os.strerror(ctypes.get_errno())})"


def children(pid: int) -> list[int]:
    """Direct children of a process, from /proc."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: fields start after the last ')'.
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def descendants(pid: int) -> list[int]:
    """Every process below `pid`."""
    found, frontier = [], [pid]
    while frontier:
        below = [c for p in frontier for c in children(p)]
        found += below
        frontier = below
    return found


def resident_bytes(pids: list[int]) -> int:
    """Resident memory of processes (those that vanished count zero)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_BYTES
    return total


def kill_all(pids: list[int]) -> int:
    """SIGKILL each process; returns how many were still there to kill."""
    killed = 0
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except ProcessLookupError:
            pass
    return killed


def reap_everything(me: int) -> int:
    """Kill and reap every remaining descendant (adopted orphans included); returns how many."""
    killed = 0
    deadline = time.monotonic() + CLEANUP_S
    while time.monotonic() < deadline:
        left = descendants(me)
        if not left:
            break
        killed += kill_all(left)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        time.sleep(0.01)
    return killed


def main() -> None:
    status = os.fdopen(int(sys.argv[1]), "w", buffering=1)
    memory_limit = int(sys.argv[2])
    passed = [int(fd) for fd in sys.argv[3].split(",") if fd]
    worker_argv = sys.argv[sys.argv.index("--") + 1 :]
    me = os.getpid()
    # When the driver dies (SIGKILL included), SIGTERM comes here and `stop` kills the worker's tree.
    _libc().prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if str(os.getppid()) != os.environ.get(PARENT_ENV, str(os.getppid())):
        return  # the driver died before the signal was armed: start nothing
    _libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    network = isolate_network()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if nice := int(os.environ.get(NICE_ENV) or 0):
        os.nice(nice)
    policy = os.environ.get(sandbox.POLICY_ENV)
    required = bool(os.environ.get(sandbox.REQUIRED_ENV))
    state_read, state_write = os.pipe()

    def confine() -> None:  # in the worker's process, before exec: it runs confined from its start
        state = sandbox.confine(sandbox.Policy.from_json(policy or ""))
        os.environ[sandbox.STATE_ENV] = state  # the environment exec hands the worker
        os.write(state_write, state.encode())
        if required and not sandbox.isolated(state):
            raise OSError("confinement refused")  # no exec: nothing of the worker runs

    try:
        worker = subprocess.Popen(
            worker_argv, pass_fds=passed, start_new_session=True, preexec_fn=confine if policy else None
        )
    except (OSError, subprocess.SubprocessError):
        os.close(state_write)
        with os.fdopen(state_read, "rb") as states:
            filesystem = states.read().decode() or None
        refused = {
            "worker_pid": None,
            "network": network,
            "filesystem": filesystem,
            "confinement_refused": True,
        }
        status.write(json.dumps(refused) + "\n")
        status.write(json.dumps({"exit": None, "over_memory": False, "killed_after_exit": 0}) + "\n")
        status.close()
        return
    os.close(state_write)
    with os.fdopen(state_read, "rb") as states:
        filesystem = states.read().decode() or None
    for fd in passed:  # the worker's pipe ends now live in the worker alone (EOF must mean it is gone)
        os.close(fd)
    start = {"worker_pid": worker.pid, "network": network, "filesystem": filesystem}
    status.write(json.dumps(start) + "\n")
    over_memory = threading.Event()

    def stop(signum: int, frame: object) -> None:
        kill_all([worker.pid, *descendants(me)])

    signal.signal(signal.SIGTERM, stop)

    def watch_memory() -> None:
        while worker.poll() is None:
            if resident_bytes(descendants(me)) > memory_limit:
                over_memory.set()
                kill_all(descendants(me))
                return
            time.sleep(MEMORY_POLL_S)

    threading.Thread(target=watch_memory, daemon=True).start()
    code = worker.wait()
    left_over = reap_everything(me)
    report = {"exit": code, "over_memory": over_memory.is_set(), "killed_after_exit": left_over}
    status.write(json.dumps(report) + "\n")
    status.close()


if __name__ == "__main__":
    main()
