"""The parent's clock around a timed batch: claims below what it read are rejected, honest ones never.

Readings here are made up (the rules are arithmetic on them); the real ones, from a worker's threads, are in
test_exploits.py (a forged start time caught, its honest twin judged correct)."""

from __future__ import annotations

import os
import time
from dataclasses import replace

import cudasmith.timing.calling as calling
from cudasmith.harness.walls.cputime import ThreadTimes, thread_times
from cudasmith.harness.wire.messages import Calibrate
from cudasmith.harness.wire.outputs import Calibrated, Timed
from cudasmith.harness.witnesses.bracket import (
    CPU_MIN_PER_CALL_S,
    Calibration,
    Reading,
    calibration_plan,
    faster_than_clock,
)
from cudasmith.harness.workers.forward import CandidateCalls
from cudasmith.timing.measure import measure
from cudasmith.timing.protocol import Measurement, TimingPlan

CPU_CALIBRATION = Calibration(call_thread=1, cpu_per_call_s=20e-6, wall_per_sample_s=0.0)
GPU_CALIBRATION = Calibration(call_thread=None, cpu_per_call_s=0.0, wall_per_sample_s=100e-6)


def _reply(
    samples_ms: list[float], warmup_calls: int = 4, warmup_ms: float = 0.0, host_ms: float = 0.0
) -> Timed:
    plan = TimingPlan(warmup_ms=50.0)
    measurement = Measurement(samples_ms, "perf_counter", plan, host_ms=[host_ms] * len(samples_ms) if host_ms else [],
                              warmup_calls=warmup_calls, warmup_ms=warmup_ms)  # fmt: skip
    return Timed(measurement, input_sets=4)


def _cpu(cpu_s: float, slices: int = 1000) -> Reading:
    return Reading(wall_s=10.0, call=ThreadTimes(cpu_s, 0.0, slices, 1e-9), main=None)


def test_a_fortieth_of_its_time_reported_is_caught_on_the_cpu() -> None:
    """The issue's forgery: 14 calls of 20 ms each, every one reported as 0.5 ms."""
    forged = _reply([0.5] * 10, warmup_calls=4, warmup_ms=2.0)
    assert faster_than_clock(_cpu(14 * 0.020), CPU_CALIBRATION, forged, 0, gpu=False) is not None


def test_honest_claims_pass_however_loaded_the_machine() -> None:
    """A call's wall time is never less than its thread's CPU time: under load the claims only grow."""
    honest = _reply([20.0] * 10, warmup_calls=4, warmup_ms=80.0)
    for load in (1.0, 3.0, 10.0):  # wall time per unit of CPU time
        claimed = _reply([20.0 * load] * 10, warmup_calls=4, warmup_ms=80.0 * load)
        assert faster_than_clock(_cpu(14 * 0.020), CPU_CALIBRATION, claimed, 0, gpu=False) is None
    # The hand-over's cost per call, up to the allowance, is not the calls'.
    spent = 14 * 0.020 + 14 * CPU_MIN_PER_CALL_S
    assert faster_than_clock(_cpu(spent), CPU_CALIBRATION, honest, 0, gpu=False) is None


def test_more_calls_claimed_than_the_thread_was_handed_are_caught() -> None:
    fabricated = _reply([0.01] * 600, warmup_calls=4)
    reason = faster_than_clock(_cpu(0.004, slices=20), CPU_CALIBRATION, fabricated, 0, gpu=False)
    assert reason is not None and "handed" in reason


def test_nothing_is_judged_without_a_calibration_or_a_reading() -> None:
    forged = _reply([0.5] * 10)
    assert faster_than_clock(_cpu(1.0), None, forged, 0, gpu=False) is None
    assert faster_than_clock(Reading(1.0, None, None), CPU_CALIBRATION, forged, 0, gpu=False) is None


def test_on_a_gpu_spans_forged_down_leave_the_wall_unexplained() -> None:
    """Ten samples of a 50 ms kernel with 50 µs of issuing each: honest, then reported as a fortieth."""
    wall = 0.05 + 10 * (0.050 + 0.00005 + 100e-6) + 0.01
    reading = Reading(wall_s=wall, call=None, main=ThreadTimes(0.0, 0.002, 0, 1e-9))
    honest = _reply([50.0] * 10, host_ms=0.05)
    forged = _reply([50.0 / 40] * 10, host_ms=0.05)
    assert faster_than_clock(reading, GPU_CALIBRATION, honest, 0, gpu=True) is None
    assert faster_than_clock(reading, GPU_CALIBRATION, forged, 0, gpu=True) is not None


def test_on_a_gpu_a_launch_bound_kernel_s_check_after_each_call_is_allowed() -> None:
    """Fifty 5 µs kernels a call, issued in half a millisecond, then the judge's integrity check (a
    millisecond on a busy host), which the calibrated empty call did not have to run."""
    samples = 400
    honest = Timed(Measurement([0.25] * samples, "cupti", TimingPlan(warmup_ms=50.0), host_ms=[0.5] * samples,
                               warmup_calls=70, warmup_ms=35.0), input_sets=4)  # fmt: skip
    per_sample = 0.00025 + 0.0005 + 100e-6 + 0.0015
    reading = Reading(wall_s=0.06 + samples * per_sample, call=None, main=ThreadTimes(0.0, 0.0, 0, 1e-9))
    assert faster_than_clock(reading, GPU_CALIBRATION, honest, 0, gpu=True) is None


def test_on_a_gpu_the_judges_own_traffic_and_waiting_for_a_core_are_allowed() -> None:
    """Perturbing a gigabyte of inputs and keeping the outputs takes wall time no span shows; so does the
    worker's main thread waiting for a core on a busy host."""
    honest = _reply([1.0] * 10, host_ms=0.05)
    traffic = 10 * 3 * 1024**3 / 400e9  # at an H200's bandwidth
    reading = Reading(
        wall_s=0.06 + 10 * 0.00115 + traffic + 0.5, call=None, main=ThreadTimes(0.0, 0.5, 0, 1e-9)
    )
    assert faster_than_clock(reading, GPU_CALIBRATION, honest, 3 * 1024**3, gpu=True) is None


def test_on_a_gpu_the_judges_preparation_of_each_sample_is_allowed() -> None:
    """Cold L2 with a persisting window set by the solution: before each sample the judge waits for the
    device, resets the persisting lines and issues the flush, 10 ms a sample on the H200, which no span
    shows (the measurement reports it as its "prepare" phase); and throttled samples it discarded."""
    samples = 45
    wall = 0.05 + samples * (0.004 + 0.0003 + 100e-6 + 0.010) + 0.3
    reading = Reading(wall_s=wall, call=None, main=ThreadTimes(0.0, 0.0, 0, 1e-9))
    plain = _reply([0.004] * samples, host_ms=0.3)
    assert faster_than_clock(reading, GPU_CALIBRATION, plain, 0, gpu=True) is not None
    prepared = _reply([0.004] * samples, host_ms=0.3)
    prepared.measurement.phases_s.update({"prepare": samples * 0.010, "discarded": 0.3})
    assert faster_than_clock(reading, GPU_CALIBRATION, prepared, 0, gpu=True) is None


def test_a_calibration_is_what_the_empty_calls_cost_beyond_their_own_time() -> None:
    reply = Calibrated(
        calls=26, samples=24, claimed_ms=2.6, sampled_ms=2.4, sampling_s=0.0264, call_cpu_s=0.0031
    )
    calibration = Calibration.of(reply, call_thread=7)
    assert calibration.call_thread == 7
    assert abs(calibration.cpu_per_call_s - (0.0031 - 0.0026) / 26) < 1e-12
    assert abs(calibration.wall_per_sample_s - (0.0264 - 0.0024) / 24) < 1e-12
    for state in ("cold", "hot"):
        plan = calibration_plan(TimingPlan(l2_state=state))
        assert plan.min_samples == plan.max_samples and plan.warmup_ms == 0.0
        assert plan.l2_state == state, "the call thread's eviction is calibrated as the timed calls make it"


def test_an_honest_call_on_a_core_whose_eviction_is_costly_is_not_refused(monkeypatch) -> None:
    """On an H100's host, the call thread's eviction of its core's caches (a 4 MiB write) cost 1.4 ms of
    its CPU time per call, beyond the fixed allowance, and an honest 0.25 ms C kernel was refused. A call
    thread whose eviction writes 64 MiB stands for such a core here: calibrated with the cold calls' own
    eviction, the honest calls pass; calibrated hot (as before), the same calls were refused."""
    monkeypatch.setattr(calling, "PRIVATE_FLUSH_BYTES", 64 * 1024**2)
    thread = calling.CallThread()
    monkeypatch.setattr(calling, "_call_thread", thread)
    plan = TimingPlan(l2_state="cold", warmup_calls=2, warmup_ms=0.0, min_samples=60, max_samples=60,
                      min_sampling_s=0.0)  # fmt: skip
    calls = CandidateCalls(guard=None, problem=None, device="cpu", exporter=None)  # type: ignore[arg-type]

    def calibration(state: str) -> Calibration:
        calibrate = Calibrate(calibration_plan(replace(plan, l2_state=state)))
        return Calibration.of(calls.calibrate(calibrate), thread.native_id)

    def spin(index: int) -> int:
        ends = time.thread_time() + 200e-6
        while time.thread_time() < ends:
            pass
        return index

    cold, hot = calibration("cold"), calibration("hot")
    before = thread_times(os.getpid(), thread.native_id)
    measurement = measure(spin, 1, "cpu", plan)
    after = thread_times(os.getpid(), thread.native_id)
    assert before is not None and after is not None
    reading = Reading(wall_s=0.0, call=after.since(before), main=None)
    reply = Timed(measurement, input_sets=1)
    assert cold.cpu_per_call_s > CPU_MIN_PER_CALL_S, "the eviction is what each call costs beyond its time"
    assert faster_than_clock(reading, cold, reply, 0, gpu=False) is None
    assert faster_than_clock(reading, hot, reply, 0, gpu=False) is not None


def test_the_kernel_s_counts_of_a_thread_are_read() -> None:
    import os
    import threading

    times = thread_times(os.getpid(), threading.get_native_id())
    assert times is not None and times.cpu_s > 0 and times.slices >= 1
    assert thread_times(os.getpid(), 2**31 - 1) is None
