"""The timing lease of one device: candidates share it while they import, build and run their correctness
rounds; a timing window has it alone.

A request that may run work on the device and that the judge waits for (a correctness call, the reference's
outputs and comparisons, starting a worker) is a *step*: steps of different candidates run at once. A
*hold* is exclusive: it waits until the steps under way have finished, lets no new one start, and pauses
(SIGSTOP) every other candidate worker of the device, so that work a candidate launches outside its own
calls (a background thread) cannot reach the window either: on the GPU, those of a worker's processes that
hold the GPU (a compiler it runs goes on); on the CPU, all of them, and the judge's workers of the other
sessions too (their imports and their problem's load run outside any step). A paused worker's deadlines are
extended by the pause. A worker a hold may pause is started in a step, so none starts unpaused inside one.
Inside a hold, each timed request is a *window*: checked afterwards (witnesses/exclusive.py) and timed
again, a bounded number of times, when another process was found running in it.

One lease per device per process (`lease_for`): sessions on the same device share it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import TypeVar

from cudasmith.harness.pool import PrepareGate
from cudasmith.harness.walls.pausing import pause_workers, process_tree, worker_processes
from cudasmith.harness.walls.process import WorkerProcess
from cudasmith.harness.wire.messages import TimeSpec
from cudasmith.harness.witnesses.exclusive import ActivityProbe, CpuActivity, Unverified
from cudasmith.timing.protocol import WARMUP_MS_FOLLOWING

# A window found shared is timed again at most this many times; after that its time is kept and
# flagged, and no speedup is reported from it.
MAX_RETIMES = 2
# How long a worker's last step is remembered: far longer than any settling (exclusive.NVML_PERIOD_S).
ENDS_KEPT_S = 30.0
# A window on a GPU that starts at most this long after the hold's previous one ended (a re-check of
# timed outputs between them) follows it: its warm-up is protocol.WARMUP_MS_FOLLOWING.
FOLLOWING_S = 0.5

Result = TypeVar("Result")


@dataclass
class Window:
    """How one timed request went: whether its last try was exclusive, whether that was verified,
    how many times it was timed again, and what else ran (when something did)."""

    exclusive: bool
    verified: bool
    retimed: int = 0
    others: list[str] = field(default_factory=list)
    # Where the window's wall time went, in seconds, every try included: the timed request itself, from
    # sending it to its answer (`request_s`), listing the processes to watch (`watch_s`), asking the probe
    # before and after (`probe_s`), and waiting for NVML's samples to settle first (`settle_s`).
    request_s: float = 0.0
    watch_s: float = 0.0
    probe_s: float = 0.0
    settle_s: float = 0.0


@dataclass
class LeaseTally:
    """What a lease's holds cost, summed since it was made (one lease per device per process): how many
    holds and windows, the seconds held, the seconds of timed requests (the exclusive time the device's
    judging needed: the bound under its throughput) and of the checks around them."""

    holds: int = 0
    windows: int = 0
    held_s: float = 0.0
    request_s: float = 0.0
    watch_s: float = 0.0
    probe_s: float = 0.0
    settle_s: float = 0.0

    def add(self, window: Window) -> None:
        self.windows += 1
        self.request_s += window.request_s
        self.watch_s += window.watch_s
        self.probe_s += window.probe_s
        self.settle_s += window.settle_s


@dataclass
class _Registered:
    """A worker of the device's sessions: a candidate's, or a `trusted` one of the judge; whose it is."""

    worker: WorkerProcess
    trusted: bool
    session: object | None = None


class TimingLease:
    """Steps share the device; a hold has it alone (see the module's docstring)."""

    def __init__(self, gpu: bool, probe: ActivityProbe | None = None) -> None:
        self.gpu = gpu
        self.probe: ActivityProbe = probe or (Unverified("no GPU probe yet") if gpu else CpuActivity())
        self._cond = threading.Condition()
        self._steps = 0
        self._holder: int | None = None
        self._holds_waiting = 0
        # When each worker's last step (or timed window) ended; None: a step that named no worker.
        self._ends: dict[WorkerProcess | None, float] = {}
        self._workers: list[_Registered] = []
        self._local = threading.local()
        self.holds = 0
        self.tally = LeaseTally()
        self.prepares = PrepareGate()  # the device's candidate workers' turns to make their context

    # -- workers -------------------------------------------------------------------------------

    def register(self, worker: WorkerProcess, trusted: bool = False, session: object | None = None) -> None:
        """A worker of a session on this device: a candidate's is paused by holds; a `trusted` one (the
        judge's reference or baseline worker) only answers requests: watched, and paused only on the CPU
        by the holds of other sessions. `session`: whose worker it is (any object the session's holds name)."""
        with self._cond:
            self._workers = [entry for entry in self._workers if entry.worker.alive]
            self._workers.append(_Registered(worker, trusted, session))
            # Ends older than any settling are of no more use (a worker that died just now still counts).
            since = time.monotonic() - ENDS_KEPT_S
            self._ends = {w: end for w, end in self._ends.items() if end > since}

    def started(
        self, spawn: Callable[[], WorkerProcess], trusted: bool = False, session: object | None = None
    ) -> WorkerProcess:
        """A worker `spawn` starts, registered (as in register). One that holds may pause (a candidate's or a
        build's; on the CPU, a judge's too) is spawned in a step and known by its pid before the step ends,
        so that none starts unpaused inside a window; a judge's worker on a GPU, never paused, is not waited
        for."""
        pausable = not trusted or not self.gpu
        with self.step() if pausable else nullcontext():
            worker = spawn()
            self.register(worker, trusted, session)
            if pausable:
                worker.wait_started()
        return worker

    def in_use(self) -> bool:
        """Whether any session's worker is alive on this device (before a new session registers its own:
        another session judges here). A build ahead is nobody's session: it does not count."""
        with self._cond:
            return any(entry.worker.alive and entry.session is not None for entry in self._workers)

    def _alive(self, trusted: bool) -> list[WorkerProcess]:
        with self._cond:
            return [e.worker for e in self._workers if e.worker.alive and e.trusted is trusted]

    def _session_of(self, worker: WorkerProcess | None) -> object | None:
        with self._cond:
            return next((e.session for e in self._workers if e.worker is worker), None)

    def _judges_of_others(self, session: object | None) -> list[WorkerProcess]:
        """The trusted workers of sessions other than `session` (none when the hold names no session)."""
        if session is None:
            return []
        with self._cond:
            return [
                e.worker
                for e in self._workers
                if e.trusted and e.worker.alive and e.session is not None and e.session is not session
            ]

    # -- steps and holds -----------------------------------------------------------------------

    def _busy_until(self, timed: WorkerProcess) -> float:
        """When a process whose work a window of `timed` could see in NVML's samples last worked: steps
        and windows of the other candidates' workers, and steps that named no worker. The timed worker's
        own work and the judge's workers' (neither counts against its window) need no settling."""
        with self._cond:
            trusted = {id(e.worker) for e in self._workers if e.trusted}
            ends = [
                end
                for worker, end in self._ends.items()
                if worker is None or (worker is not timed and id(worker) not in trusted)
            ]
        return max(ends, default=0.0)

    def _ended(self, worker: WorkerProcess) -> None:
        with self._cond:
            self._ends[worker] = time.monotonic()

    @contextmanager
    def step(self, worker: WorkerProcess | None = None) -> Iterator[None]:
        """Around a request that may use the device (of `worker`, when known): waits while a hold is held
        or waited for; the holder's own steps pass."""
        me = threading.get_ident()
        with self._cond:
            # The holder's own steps pass, and so does a step inside a step of this thread: a hold waiting
            # for the outer one would otherwise wait for itself.
            counted = self._holder != me and not getattr(self._local, "depth", 0)
            if counted:
                while self._holder is not None or self._holds_waiting:
                    self._cond.wait()
                self._steps += 1
        self._local.depth = getattr(self._local, "depth", 0) + 1
        try:
            yield
        finally:
            self._local.depth -= 1
            if counted:
                with self._cond:
                    self._steps -= 1
                    self._ends[worker] = time.monotonic()
                    self._cond.notify_all()

    @contextmanager
    def hold(self, owner: WorkerProcess | None = None, session: object | None = None) -> Iterator[Hold]:
        """The device alone: steps drained, other candidate workers paused (`owner`, the candidate being
        timed, is paused only while something else is timed) and, on the CPU, the trusted workers of
        sessions other than `session` (by default the owner's). Never taken inside a step."""
        if getattr(self._local, "depth", 0):
            raise RuntimeError("a timing hold taken inside a step would wait for itself")
        me = threading.get_ident()
        asked = time.monotonic()
        with self._cond:
            if self._holder == me:
                raise RuntimeError("a timing hold is already held by this thread")
            self._holds_waiting += 1
            try:
                while self._holder is not None or self._steps:
                    self._cond.wait()
            finally:
                self._holds_waiting -= 1
            self._holder = me
            self.holds += 1
        if session is None:
            session = self._session_of(owner)
        granted = time.monotonic()
        hold = Hold(self, owner, drain_s=granted - asked, session=session)
        try:
            yield hold
        finally:
            released = time.monotonic()
            hold.release()
            hold.release_s = time.monotonic() - released
            hold.held_s = time.monotonic() - granted
            with self._cond:
                self.tally.holds += 1
                self.tally.held_s += hold.held_s
                for window in hold.windows:
                    self.tally.add(window)
                self._holder = None
                if owner is not None:  # it ran, unpaused, until now: the next hold settles from here
                    self._ends[owner] = time.monotonic()
                self._cond.notify_all()


class Hold:
    """The device held alone by one thread: the windows it times, and the workers it paused."""

    def __init__(
        self,
        lease: TimingLease,
        owner: WorkerProcess | None,
        drain_s: float = 0.0,
        session: object | None = None,
    ) -> None:
        self.lease = lease
        self.owner = owner
        self.windows: list[Window] = []
        # What the hold waited for before it timed anything, in seconds: the steps under way and other
        # holds (drain_s), the other workers to show as stopped (pause_s), NVML's samples to settle.
        self.drain_s = drain_s
        self.settle_s = 0.0
        # Seconds the hold lasted, from the device granted to its workers resumed, and the resuming.
        self.held_s = 0.0
        self.release_s = 0.0
        self._last_end: float | None = None  # when the hold's last window ended
        self._paused = [w for w in lease._alive(trusted=False) if w is not owner]
        if not lease.gpu:
            # Another session's judge may be importing torch or loading its problem (outside any step):
            # on the CPU that is work beside the window. On a GPU its device work is done in steps.
            self._paused += lease._judges_of_others(session)
        pausing = time.monotonic()
        # A worker paused in the middle of a request may have had GPU work queued until now; one still
        # importing (a new worker, asked only whether it is up) has no context to queue any on.
        self._busy_at_pause = pausing if any(w.device_work_in_flight for w in self._paused) else 0.0
        pause_workers(self._paused, gpu_only=lease.gpu)
        self.pause_s = time.monotonic() - pausing

    def _watched(self, timed: WorkerProcess) -> tuple[list[int], set[int]]:
        """Every process of the device's sessions but the timed worker itself, and the judge's own."""
        watched, trusted, tree = [], set(), process_tree()
        for worker in self.lease._alive(trusted=False):
            watched += worker_processes(worker, tree)
        for worker in self.lease._alive(trusted=True):
            processes = worker_processes(worker, tree)
            watched += processes
            if worker is not timed:
                trusted.update(processes)
        own = timed.status("worker_pid")
        return [p for p in watched if p != own], trusted

    def timed(self, spec: TimeSpec) -> TimeSpec:
        """`spec` as the window starting now times it: on a GPU, a window that follows the hold's previous
        one (FOLLOWING_S) warms up for WARMUP_MS_FOLLOWING, not the plan's time; its calls are as many."""
        last, plan = self._last_end, spec.plan
        if not self.lease.gpu or last is None or time.monotonic() - last > FOLLOWING_S:
            return spec
        return replace(spec, plan=replace(plan, warmup_ms=min(plan.warmup_ms, WARMUP_MS_FOLLOWING)))

    def window(
        self,
        timed: WorkerProcess,
        run: Callable[[], Result],
        measured: Callable[[Result], bool] = lambda _: True,
    ) -> tuple[Result, Window]:
        """Run one timed request of `timed` with nothing else running; check afterwards what did, and
        run it again (at most MAX_RETIMES times) while something else did. `measured`: whether a result
        is a measurement worth taking again (a failure is not)."""
        extra = []
        if self.owner is not None and timed is not self.owner and not self.owner.paused:
            pause_workers([self.owner], gpu_only=self.lease.gpu)
            extra.append(self.owner)
        # A process's work can show in samples taken up to a sampling period after it stopped: the work
        # of another candidate (a step, a window: the candidate timed before a baseline) is waited out.
        busy_until = max(self.lease._busy_until(timed), self._busy_at_pause)
        costs = Window(exclusive=False, verified=False)  # the costs, summed over the tries
        try:
            if (wait := busy_until + self.lease.probe.settle_s() - time.monotonic()) > 0:
                time.sleep(wait)
                self.settle_s += wait
                costs.settle_s = wait
            retimed = 0
            while True:
                clock = time.monotonic()
                watched, trusted = self._watched(timed)
                listed = time.monotonic()
                mark = self.lease.probe.begin(watched)
                sent = time.monotonic()
                result = run()
                answered = time.monotonic()
                # Processes that appeared meanwhile are watched too (all their time is the window's).
                after, trusted_after = self._watched(timed)
                watched = [*watched, *(pid for pid in after if pid not in watched)]
                own = {timed.status("worker_pid")}
                relisted = time.monotonic()
                check = self.lease.probe.check(mark, own, watched, trusted | trusted_after)
                costs.watch_s += (listed - clock) + (relisted - answered)
                costs.probe_s += (sent - listed) + (time.monotonic() - relisted)
                costs.request_s += answered - sent
                if check.shared and measured(result) and retimed < MAX_RETIMES:
                    retimed += 1
                    continue
                window = replace(
                    costs,
                    exclusive=not check.shared,
                    verified=check.verified,
                    retimed=retimed,
                    others=check.others,
                )
                self.windows.append(window)
                return result, window
        finally:
            self.lease._ended(timed)
            self._last_end = time.monotonic()
            for worker in extra:
                worker.resume()

    def release(self) -> None:
        for worker in self._paused:
            worker.resume()
        self._paused.clear()


_leases: dict[str, TimingLease] = {}
_leases_lock = threading.Lock()


def lease_for(device: str) -> TimingLease:
    """The lease of one device of this process: 'cpu', or a GPU as the driver names it (its index or
    UUID, as process.visible_gpu gives it)."""
    with _leases_lock:
        if device not in _leases:
            _leases[device] = TimingLease(gpu=device != "cpu")
        return _leases[device]
