"""The parent's own clock around each timed batch: a time a candidate's worker reports is a claim, and a
claim faster than what the parent measured allows is rejected (Rule.TIMING_CLOCK).

Samples are taken inside the candidate's process, where native code or raw memory can rewrite them (the
start time of each call, CUPTI's spans). What the parent reads cannot be rewritten from there:

- On the CPU, the kernel's count of the call thread's CPU time (timing/calling.py: each call runs on a
  thread that runs nothing else). A call's claimed time is wall time on that one thread, which is never
  less than the CPU time the thread spent on it, loaded machine or not. So the claims (samples and warm-up
  calls) must add up to at least the thread's CPU time less what a call costs beyond its own time: the
  hand-over and the eviction of the core's caches, calibrated on the judge's empty function in the same
  worker before any solution loaded, four times over, plus a fixed allowance. A forger that reports a
  fortieth of its time is short by nearly all of it. The thread must also have been handed as many calls
  as are claimed (it is scheduled in at least once per call).
- On a GPU, the parent's wall time of the request, less the time the worker's main thread waited for a
  core: each sample's GPU span and the host's time to issue it, the per-sample cost calibrated on the
  judge's empty call and the integrity check after each call, the warm-up the plan allows, the judge's own
  traffic (perturbing the inputs, keeping the outputs), reading CUPTI's records, each sample's preparation
  (the reset of persisting L2 lines and the flush) and the samples not kept (timed out behind the blocker,
  or throttled) must explain it within a factor of GPU_FACTOR.

What this cannot stop: a forger whose calls are faster than the allowance (a call shorter than the
per-call slack on the CPU, or than the per-sample overheads on a GPU, moves the bound by less than its
noise); work moved to threads other than the call thread while it sleeps (CPU); host-side claims inflated
along with the spans (GPU). The frozen re-check of outputs (rechecks.py) is the other outside witness.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, replace

from cudasmith.harness.walls.cputime import ThreadTimes, thread_times
from cudasmith.harness.walls.process import WorkerProcess
from cudasmith.harness.wire.outputs import Calibrated, Timed
from cudasmith.timing.protocol import TimingPlan

# CPU: a call's cost beyond its own time may be this many times the calibrated one, and at least this much
# (the hand-over between two threads and the eviction of a core's caches, well under a millisecond); the
# request may add this much CPU time of the call thread's beyond its calls; and claims may fall short of
# the CPU time by this share of themselves (clock resolution, rounding).
CPU_FACTOR = 4.0
CPU_MIN_PER_CALL_S = 1e-3
CPU_FIXED_S = 0.05
CPU_REL_SLACK = 0.05
# The call thread is scheduled in once per call at least; a few more calls claimed are forgiven.
SLICE_SLACK = 2
# GPU: the wall time the claims and the calibrated costs explain may be exceeded by this factor, plus this;
# the judge's own traffic per sample is counted at this bandwidth (bytes per second), far under any GPU's;
# and each sample may cost this much more than the calibrated empty call's: the integrity check after each
# call (which has nothing to check before a solution loads) and reading more CUPTI records.
GPU_FACTOR = 1.5
GPU_FIXED_S = 0.1
GPU_JUDGE_BANDWIDTH = 100e9
GPU_CHECK_ALLOWANCE_S = 2e-3
# The judge's empty calls each worker times before its solution loads: samples, and warm-up calls.
CALIBRATION_SAMPLES = 24
CALIBRATION_WARMUP_CALLS = 2


def calibration_plan(plan: TimingPlan) -> TimingPlan:
    """The session's plan for the judge's empty calls: a fixed number of samples, queued, with the plan's
    cache state. On the CPU a cold call thread first evicts its own core's caches (timing/calling.py), which
    its CPU time counts: calibrated hot, that eviction was left out, and on an H100's host, where each cold
    call cost its thread about 1.4 ms beyond its own time, an honest C kernel of 0.25 ms a call was refused
    by the CPU's bound."""
    return replace(
        plan,
        launch="queued",
        warmup_calls=CALIBRATION_WARMUP_CALLS,
        warmup_ms=0.0,
        min_samples=CALIBRATION_SAMPLES,
        max_samples=CALIBRATION_SAMPLES,
        min_sampling_s=0.0,
    )


@dataclass(frozen=True)
class Calibration:
    """What a worker's calls cost beyond their own time, measured before its solution loaded: per call on
    the call thread's CPU (CPU), and per sample in wall time (GPU); the call thread's id in /proc."""

    call_thread: int | None
    cpu_per_call_s: float
    wall_per_sample_s: float

    @classmethod
    def of(cls, reply: Calibrated, call_thread: int | None) -> Calibration:
        """From the worker's own report of the judge's empty calls (trusted: no solution had loaded)."""
        cpu = 0.0
        if reply.call_cpu_s is not None and reply.calls:
            cpu = max(0.0, (reply.call_cpu_s - reply.claimed_ms / 1e3) / reply.calls)
        wall = max(0.0, (reply.sampling_s - reply.sampled_ms / 1e3) / reply.samples) if reply.samples else 0.0
        return cls(call_thread, cpu, wall)


@dataclass(frozen=True)
class Reading:
    """The parent's readings around one timed request: its wall time, and the deltas the kernel counted for
    the worker's call thread (CPU) and main thread."""

    wall_s: float
    call: ThreadTimes | None
    main: ThreadTimes | None


class Bracket:
    """Readings of one worker taken by the parent as a request is sent and as its answer arrives."""

    def __init__(self, worker: WorkerProcess, calibration: Calibration | None) -> None:
        self.pid = worker.status("worker_pid")
        self.call_thread = calibration.call_thread if calibration is not None else None
        self._started = time.monotonic()
        self._call = self._read(self.call_thread)
        self._main = self._read(self.pid)

    def _read(self, tid: int | None) -> ThreadTimes | None:
        return thread_times(self.pid, tid) if self.pid is not None and tid is not None else None

    def stop(self) -> Reading:
        """The readings since the bracket began."""
        wall = time.monotonic() - self._started
        call, main = self._read(self.call_thread), self._read(self.pid)
        return Reading(
            wall,
            call.since(self._call) if call is not None and self._call is not None else None,
            main.since(self._main) if main is not None and self._main is not None else None,
        )


def faster_than_clock(
    reading: Reading, calibration: Calibration | None, reply: Timed, judge_bytes: int, gpu: bool
) -> str | None:
    """Why the times a worker reported are below what the parent's clock allows (the module's rules), or
    None when they are not (or the parent could read nothing to tell)."""
    if calibration is None:
        return None
    return _gpu(reading, calibration, reply, judge_bytes) if gpu else _cpu(reading, calibration, reply)


def _cpu(reading: Reading, calibration: Calibration, reply: Timed) -> str | None:
    spent = reading.call
    if spent is None:
        return None
    measurement = reply.measurement
    calls = len(measurement.samples_ms) + measurement.warmup_calls
    claimed_s = (sum(measurement.samples_ms) + measurement.warmup_ms) / 1e3
    per_call = max(CPU_FACTOR * calibration.cpu_per_call_s, CPU_MIN_PER_CALL_S)
    allowed = calls * per_call + CPU_FIXED_S + 2 * spent.resolution_s + CPU_REL_SLACK * claimed_s
    if spent.cpu_s - claimed_s > allowed:
        return (
            f"its {calls} timed and warm-up calls report {claimed_s * 1e3:.1f} ms in all, but the thread that "
            f"made them spent {spent.cpu_s * 1e3:.1f} ms of CPU time on them (the parent's reading; "
            f"{allowed * 1e3:.1f} ms allowed beyond the calls)"
        )
    if spent.resolution_s < 1e-6 and calls > spent.slices + SLICE_SLACK:
        return f"{calls} calls are reported, but the thread that makes them was handed at most {spent.slices}"
    return None


def _gpu(reading: Reading, calibration: Calibration, reply: Timed, judge_bytes: int) -> str | None:
    measurement = reply.measurement
    plan = measurement.plan
    samples = len(measurement.samples_ms)
    host = measurement.host_ms if len(measurement.host_ms) == samples else [0.0] * samples
    per_sample = [(span + issued) / 1e3 for span, issued in zip(measurement.samples_ms, host, strict=True)]
    overhead = calibration.wall_per_sample_s + GPU_CHECK_ALLOWANCE_S
    call = (statistics.median(per_sample) if per_sample else 0.0) + overhead
    first_calls = max(plan.warmup_calls, reply.input_sets or 1)
    if plan.launch == "graph":  # warm-up on a side stream and a capture per input set, beside the plan's
        first_calls += 3 * (reply.input_sets or 1)
    warmup = max(plan.warmup_ms / 1e3, first_calls * call) + call
    traffic = samples * judge_bytes / GPU_JUDGE_BANDWIDTH
    phases = measurement.phases_s
    # The judge's own work around the samples: reading records, preparing each sample (the reset of
    # persisting L2 lines and the flush), and the samples not kept: a call that waited for the GPU (the
    # blocker spins until its timeout, 0.5 s, before such a call goes on), a throttled one.
    judged = sum(phases.get(phase, 0.0) for phase in ("records", "prepare", "discarded"))
    explained = warmup + sum(per_sample) + samples * overhead + traffic + judged
    active = reading.wall_s - (reading.main.wait_s if reading.main is not None else 0.0)
    if active > GPU_FACTOR * explained + GPU_FIXED_S:
        return (
            f"its {samples} samples report {sum(measurement.samples_ms):.2f} ms of GPU time in all, but the "
            f"request took {active * 1e3:.1f} ms by the parent's clock, of which the judge's own work and "
            f"the host's issuing explain {explained * 1e3:.1f} ms"
        )
    return None
