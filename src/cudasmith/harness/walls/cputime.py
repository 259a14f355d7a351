"""A worker's threads as the kernel counts them: CPU time, time waiting for a core, times scheduled in.

The parent reads these in /proc around a timed request (harness/witnesses/bracket.py): nothing the candidate's
process does changes what the kernel has counted. schedstat gives nanoseconds; where the kernel keeps no
schedstat, the thread's stat gives its CPU time in clock ticks and its status the context switches.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

TICKS_PER_S = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ThreadTimes:
    """One thread's counts so far: seconds on a CPU, seconds runnable but waiting for one, how many times
    it was scheduled in (each hand-over of a call at least once), and the resolution of the first two."""

    cpu_s: float
    wait_s: float
    slices: int
    resolution_s: float

    def since(self, before: ThreadTimes) -> ThreadTimes:
        """What was counted between two readings."""
        return ThreadTimes(
            self.cpu_s - before.cpu_s,
            self.wait_s - before.wait_s,
            self.slices - before.slices,
            max(self.resolution_s, before.resolution_s),
        )


def thread_times(pid: int, tid: int) -> ThreadTimes | None:
    """The counts of thread `tid` of process `pid`, or None where it is gone (or /proc says nothing)."""
    task = Path(f"/proc/{pid}/task/{tid}")
    try:
        run_ns, wait_ns, slices = (int(field) for field in (task / "schedstat").read_text().split()[:3])
        return ThreadTimes(run_ns / 1e9, wait_ns / 1e9, slices, 1e-9)
    except (OSError, ValueError):
        pass
    try:
        stat = (task / "stat").read_text()
        fields = stat[stat.rfind(")") + 2 :].split()
        ticks = int(fields[11]) + int(fields[12])  # utime and stime
        switches = sum(
            int(line.split()[1])
            for line in (task / "status").read_text().splitlines()
            if line.endswith("ctxt_switches") or "ctxt_switches:" in line
        )
    except (OSError, ValueError, IndexError):
        return None
    return ThreadTimes(ticks / TICKS_PER_S, 0.0, switches, 1.0 / TICKS_PER_S)
