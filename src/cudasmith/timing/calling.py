"""CPU samples for the timing protocol: each call on a thread of its own, timed there by a monotonic clock.

The worker's main thread prepares every call (the hooks: inputs perturbed, the last-level cache flushed,
outputs kept and checked) and hands it to the call thread, which evicts its own core's caches, takes the
time, calls, takes the time again and hands the call back. Nothing else ever runs on the call thread, so
its CPU time, which the kernel counts and the parent reads (harness/walls/cputime.py), is the calls' own
CPU time and a little hand-over: a claimed call time (wall time, on that one thread) can never be less
than that. A sample rewritten inside the process (the local `begin` below, reached through raw memory) is
caught there, from outside: harness/witnesses/bracket.py.

The call thread is started once per process, before any solution loads (the workers start it when they
are prepared, where the profiler records operators on every thread), so that it is one of the judge's own
threads in every later check; where none was started, calls are made on the calling thread, timed alike.
"""

from __future__ import annotations

import _thread
import threading
import time
from collections.abc import Callable
from typing import Any

import torch

from cudasmith.timing.protocol import CallHooks, Measurement, StopRule, TimingPlan, warm_up

# A cold sample on the CPU is preceded by writing this many bytes on the main thread (more than a
# last-level cache), and this many on the call thread (more than its core's own caches, L1 and L2).
CPU_FLUSH_BYTES = 64 * 1024**2
PRIVATE_FLUSH_BYTES = 4 * 1024**2
# Bound before any solution loads: the clocks, the grad mode switch and the CPU clocks of threads.
_perf_counter = time.perf_counter
_thread_time = time.thread_time
_cpu_clock = time.pthread_getcpuclockid
_clock_gettime = time.clock_gettime
_set_grad_enabled = torch._C._set_grad_enabled
_is_grad_enabled = torch.is_grad_enabled


class CallThread:
    """The thread that makes a process's timed calls on the CPU, and nothing else."""

    def __init__(self) -> None:
        self._go = _thread.allocate_lock()
        self._done = _thread.allocate_lock()
        self._go.acquire()
        self._done.acquire()
        self._job: tuple[Callable[[int], Any], int, bool, bool] | None = None
        self._result: tuple[float, float, Any, BaseException | None] = (0.0, 0.0, None, None)
        self._private = bytearray(PRIVATE_FLUSH_BYTES)
        self._patterns = (bytes(PRIVATE_FLUSH_BYTES), b"\xff" * PRIVATE_FLUSH_BYTES)
        thread = threading.Thread(target=self._serve, name="cudasmith-calls", daemon=True)
        thread.start()
        assert thread.ident is not None and thread.native_id is not None
        # What the parent reads in /proc (the thread's id there), and this thread's CPU clock.
        self.native_id: int = thread.native_id
        self.cpu_clock = _cpu_clock(thread.ident)

    def _serve(self) -> None:
        perf, go, done, private, patterns = _perf_counter, self._go, self._done, self._private, self._patterns
        flushes = 0
        while True:
            go.acquire()
            assert self._job is not None
            run, index, grad, flush = self._job
            output = None
            try:
                _set_grad_enabled(grad)
                if flush:
                    flushes += 1
                    private[:] = patterns[flushes & 1]
                begin = perf()
                output = run(index)
                end = perf()
                self._result = (begin, end, output, None)
            except BaseException as exc:  # the call's failure is the caller's, raised where it waits
                self._result = (0.0, 0.0, None, exc)
            del output
            done.release()

    def call(self, run: Callable[[int], Any], index: int, flush: bool) -> tuple[float, Any]:
        """`run(index)` on this thread: its time in milliseconds and its output (or what it raised);
        `flush`: evict this core's caches first."""
        self._job = (run, index, _is_grad_enabled(), flush)
        self._go.release()
        self._done.acquire()
        begin, end, output, failure = self._result
        self._result = (0.0, 0.0, None, None)
        if failure is not None:
            raise failure
        return (end - begin) * 1e3, output

    def cpu_s(self) -> float:
        """The CPU time this thread has spent, in seconds."""
        return _clock_gettime(self.cpu_clock)


_call_thread: CallThread | None = None
_call_thread_lock = threading.Lock()


def start_call_thread() -> CallThread:
    """This process's call thread, started now if it was not: from then on measure_cpu makes its calls
    there (a worker starts it before any solution loads, where operators are recorded on every thread)."""
    global _call_thread
    with _call_thread_lock:
        if _call_thread is None:
            _call_thread = CallThread()
        return _call_thread


def started_call_thread() -> CallThread | None:
    """The process's call thread, if one was started."""
    return _call_thread


# The calling thread's own caches are evicted through this buffer (where there is no call thread).
_private_here: list[bytearray] = []


def _call_here(
    run: Callable[[int], Any], index: int, flush: bool, perf: Callable[[], float] = _perf_counter
) -> tuple[float, Any]:
    """A call on the calling thread, timed as the call thread times it (where none was started); the
    clock is the one bound when this module was imported, whatever the call replaces."""
    if flush:
        if not _private_here:
            _private_here.append(bytearray(PRIVATE_FLUSH_BYTES))
        _private_here[0][:] = bytes(PRIVATE_FLUSH_BYTES)
    begin = perf()
    output = run(index)
    end = perf()
    return (end - begin) * 1e3, output


def measure_cpu(run: Callable[[int], Any], n_sets: int, plan: TimingPlan, hooks: CallHooks) -> Measurement:
    """The CPU side of timing.measure(): warm-up, then samples until the stop rule, the calls on the
    call thread, the budgets counted in the CPU time of the two threads (protocol.WALL_BACKSTOP_FACTOR)."""
    calls = _call_thread
    cold = plan.l2_state == "cold"
    flush = torch.empty(CPU_FLUSH_BYTES, dtype=torch.uint8) if cold else None
    thread_time, gettime = _thread_time, _clock_gettime
    cpu_clock = calls.cpu_clock if calls is not None else None

    def busy_s() -> float:  # the CPU time of this thread and the call thread
        return thread_time() + (gettime(cpu_clock) if cpu_clock is not None else 0.0)

    # Bound before the first call: between a call's return and its check (hooks.called) nothing is looked up.
    perf, called, call = _perf_counter, hooks.called, calls.call if calls is not None else _call_here
    started = perf()
    warmup_calls, warmup_ms = warm_up(
        lambda index: call(run, index, cold), n_sets, plan, lambda: None, hooks, busy_s
    )
    warmed = perf()
    samples: list[float] = []
    rule = StopRule(plan, busy_s)
    while (stop := rule.reason()) is None:
        sample, index = len(samples), len(samples) % n_sets
        hooks.before(sample, index)
        if flush is not None:
            flush.fill_(sample & 0xFF)
        sample_ms, output = call(run, index, cold)
        called(sample)
        samples.append(sample_ms)
        rule.add(sample_ms)
        hooks.after(sample, index, output, True)
        del output
    phases = {"warmup": warmed - started, "sampling": perf() - warmed}
    return Measurement(
        samples,
        "perf_counter",
        plan,
        stop=stop,
        phases_s=phases,
        warmup_calls=warmup_calls,
        warmup_ms=warmup_ms,
    )
