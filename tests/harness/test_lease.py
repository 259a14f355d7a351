"""The timing lease on the CPU: steps share the device and a hold has it alone; pausing a worker stops its
processes and extends its deadlines; a window is checked afterwards for other processes, and one found
shared is timed again, a bounded number of times. NVML's side is checked against a stand-in for pynvml
here and on a GPU by tests/harness/test_lease_gpu.py."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cudasmith.harness import lease as lease_module
from cudasmith.harness.lease import FOLLOWING_S, MAX_RETIMES, TimingLease, Window
from cudasmith.harness.timed import exclusivity, waited
from cudasmith.harness.walls.pausing import pause_workers, worker_processes
from cudasmith.harness.walls.process import WorkerProcess
from cudasmith.harness.wire.messages import Ack, LoadSolution, Ping, Prepare, Run, Time, TimeSpec, WorkerSetup
from cudasmith.harness.wire.results import TimingReport
from cudasmith.harness.witnesses.exclusive import (
    CpuActivity,
    GpuActivity,
    Unverified,
    WindowCheck,
    cpu_seconds,
)
from cudasmith.timing.protocol import WARMUP_MS, WARMUP_MS_FOLLOWING, TimingPlan

from conftest import PROBLEMS

SPIN = [sys.executable, "-c", "while True: pass"]
SLEEP = [sys.executable, "-c", "import time; time.sleep(600)"]
# A solution whose import leaves a child process that sleeps (it holds no GPU).
WITH_CHILD = f"""import subprocess
CHILD = subprocess.Popen({SLEEP!r})

class ModelNew:
    pass
"""


def until(condition: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    """Wait for another thread or process to reach a state (a synchronisation, not a timing claim)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        threading.Event().wait(0.01)


def state(pid: int) -> str:
    """A process's scheduler state from /proc: 'T' when stopped."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rfind(")") + 2]


def candidate_worker() -> WorkerProcess:
    worker = WorkerProcess(WorkerSetup("candidate", str(PROBLEMS / "add_small.py"), "cpu", defences=False))
    worker.request(Ping(), 120, "starting")
    return worker


def test_steps_run_together_and_a_hold_waits_for_them_then_has_the_device_alone() -> None:
    lease = TimingLease(gpu=False)
    inside, release = threading.Event(), threading.Event()
    log: list[str] = []

    def stepper(name: str) -> None:
        with lease.step():
            log.append(f"{name} in")
            inside.set()
            release.wait(60)
        log.append(f"{name} out")

    first = threading.Thread(target=stepper, args=("first",))
    first.start()
    inside.wait(60)

    def holder() -> None:
        with lease.hold():
            log.append("hold")

    holding = threading.Thread(target=holder)
    holding.start()
    until(lambda: lease._holds_waiting == 1, "the hold waiting for the step")
    late = threading.Thread(target=stepper, args=("late",))
    late.start()  # a new step waits behind the hold that is waited for
    release.set()
    for thread in (first, holding, late):
        thread.join(60)
    assert log.index("first out") < log.index("hold") < log.index("late in")


def test_a_hold_says_how_long_it_waited_for_the_steps_under_way(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]  # a stand-in clock: the step moves it on, so the figures are exact
    monkeypatch.setattr(lease_module, "time", SimpleNamespace(monotonic=lambda: clock[0], sleep=time.sleep))
    lease = TimingLease(gpu=False)
    inside, release = threading.Event(), threading.Event()

    def stepper() -> None:
        with lease.step():
            inside.set()
            release.wait(60)
            clock[0] += 7.0  # the step ends 7 s after the hold asked for the device

    step = threading.Thread(target=stepper)
    step.start()
    inside.wait(60)
    found: dict[str, float] = {}

    def holder() -> None:
        with lease.hold() as hold:
            found.update(drain=hold.drain_s, pause=hold.pause_s, settle=hold.settle_s)

    holding = threading.Thread(target=holder)
    holding.start()
    until(lambda: lease._holds_waiting == 1, "the hold waiting for the step")
    release.set()
    for thread in (step, holding):
        thread.join(60)
    assert found == {"drain": 7.0, "pause": 0.0, "settle": 0.0}


class Settling(Unverified):
    """A stand-in GPU probe whose samples lag by half a second; no window is found shared."""

    def settle_s(self) -> float:
        return 0.5


class Stub:
    """A worker as the lease sees one: alive, its pid (a process with no children), no request under way."""

    def __init__(self, pid: int) -> None:
        self.alive, self.device_work_in_flight, self.paused = True, False, False
        self.process = SimpleNamespace(pid=pid)
        self.stopped: list[int] = []  # it starts nothing, so pausing it finds nothing to stop

    def status(self, key: str) -> int:
        return self.process.pid

    def resume(self) -> None:
        pass


@contextmanager
def settling_lease(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TimingLease, list[float], int]]:
    """A GPU lease whose probe's samples lag by half a second, on a clock the test moves (a sleep moves
    it), and the pid of a sleeping process for stand-in workers to carry."""
    clock = [100.0]
    monkeypatch.setattr(
        lease_module,
        "time",
        SimpleNamespace(monotonic=lambda: clock[0], sleep=lambda s: clock.__setitem__(0, clock[0] + s)),
    )
    sleeper = subprocess.Popen(SLEEP)
    try:
        yield TimingLease(gpu=True, probe=Settling("a stand-in")), clock, sleeper.pid
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.parametrize(
    ("last_step_of", "timing", "settles"),
    [
        ("another candidate", "the owner", True),
        ("unnamed", "the owner", True),
        ("the owner", "the owner", False),
        ("the judge's worker", "the owner", False),
        ("the owner", "the judge's worker", True),  # a baseline timed right after the candidate worked
    ],
)
def test_a_window_settles_only_after_work_it_could_see(
    last_step_of: str, timing: str, settles: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NVML's samples lag: a window waits out a sampling period after the work of a process its check
    watches, not after the timed worker's own work or the judge's workers' (not counted against it)."""
    with settling_lease(monkeypatch) as (lease, _, pid):
        owner, other, judges = Stub(pid), Stub(pid), Stub(pid)
        lease.register(judges, trusted=True)  # type: ignore[arg-type]
        worker = {
            "another candidate": other,
            "unnamed": None,
            "the owner": owner,
            "the judge's worker": judges,
        }
        with lease.step(worker[last_step_of]):  # type: ignore[arg-type]
            pass
        with lease.hold(owner=owner) as hold:  # type: ignore[arg-type]
            hold.window(worker[timing], lambda: "timed")  # type: ignore[arg-type]
        assert hold.settle_s == (0.5 if settles else 0.0)


@pytest.mark.parametrize("other_busy", [True, False])
def test_a_hold_settles_after_pausing_a_worker_only_if_it_could_have_queued_device_work(
    other_busy: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A candidate paused in the middle of a request may have left GPU work that NVML shows a period
    later: the first window waits it out. A new worker still importing (only its ping unanswered) has no
    context to queue work on: no wait."""
    with settling_lease(monkeypatch) as (lease, clock, pid):
        owner, other = Stub(pid), Stub(pid)
        other.device_work_in_flight = other_busy
        lease.register(other)  # type: ignore[arg-type]
        lease.register(owner)  # type: ignore[arg-type]
        clock[0] += 10.0  # their steps, if any, long over
        with lease.hold(owner=owner) as hold:  # type: ignore[arg-type]
            hold.window(owner, lambda: "timed")  # type: ignore[arg-type]
        assert hold.settle_s == (0.5 if other_busy else 0.0)


def test_only_a_request_that_can_run_kernels_counts_as_device_work_in_flight() -> None:
    worker = object.__new__(WorkerProcess)
    worker._expected = {}
    assert not worker.device_work_in_flight
    worker._expected[1] = Ping
    assert not worker.device_work_in_flight, "a new worker importing has no context"
    worker._expected[2] = Prepare
    assert not worker.device_work_in_flight, "a context and two one-element fills: NVML shows 0 %"
    worker._expected[3] = Run
    assert worker.device_work_in_flight
    del worker._expected[1], worker._expected[2]
    assert worker.device_work_in_flight
    worker._expected[4] = Time
    del worker._expected[3]
    assert worker.device_work_in_flight


@pytest.mark.parametrize(
    ("gpu", "gap_s", "warmup_ms"),
    [
        (True, None, WARMUP_MS),  # the hold's first window: the device may have idled
        (True, 0.3, WARMUP_MS_FOLLOWING),  # a re-check's length after the last window
        (True, FOLLOWING_S + 0.1, WARMUP_MS),  # long enough for the clocks to fall
        (False, 0.3, WARMUP_MS),  # the fidelity evidence is a GPU's
    ],
)
def test_a_window_right_after_another_on_a_gpu_warms_up_shorter(
    gpu: bool, gap_s: float | None, warmup_ms: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    with settling_lease(monkeypatch) as (lease, clock, pid):
        lease.gpu = gpu
        owner = Stub(pid)
        lease.register(owner)  # type: ignore[arg-type]
        spec = TimeSpec(0, {"n": 1}, 1, (2, 3), TimingPlan())
        seen: list[TimeSpec] = []
        with lease.hold(owner=owner) as hold:  # type: ignore[arg-type]
            if gap_s is not None:
                hold.window(owner, lambda: seen.append(hold.timed(spec)))  # type: ignore[arg-type]
                clock[0] += gap_s
            hold.window(owner, lambda: seen.append(hold.timed(spec)))  # type: ignore[arg-type]
    assert seen[0].plan.warmup_ms == WARMUP_MS, "a hold's first window keeps the protocol's warm-up"
    assert seen[-1].plan.warmup_ms == warmup_ms
    assert seen[-1].plan.warmup_calls == spec.plan.warmup_calls, "as many warm-up calls either way"
    assert replace(seen[-1], plan=spec.plan) == spec, "only the warm-up time changes"


def test_a_verdict_sums_what_its_holds_waited_for_and_where_their_time_went() -> None:
    report = TimingReport("warm", "queued")
    windows = [
        Window(True, True, request_s=0.25, watch_s=0.01, probe_s=0.02),
        Window(True, True, request_s=0.5),
    ]
    for _ in range(2):
        hold = SimpleNamespace(
            drain_s=1.0004, pause_s=0.5, settle_s=1 / 6, held_s=1.5, release_s=0.001, windows=windows
        )
        waited(report, hold)  # type: ignore[arg-type]
    exclusivity(report, [], "checked")
    assert (report.drain_s, report.pause_s, report.settle_s) == (2.001, 1.0, 0.333)
    assert (report.held_s, report.requests_s, report.watch_s, report.probe_s) == (3.0, 1.5, 0.02, 0.04)
    assert TimingReport.from_dict(report.to_dict()) == report


def test_a_window_says_where_its_time_went_and_the_lease_sums_every_hold() -> None:
    """The timed request, the probe's checks and the listing of processes are told apart in a window,
    every try included, and the lease's tally sums them over its holds: what the bound of a stream reads."""
    worker = candidate_worker()
    try:
        lease = TimingLease(gpu=False, probe=Scripted(shared=1))
        with lease.hold() as hold:
            _, window = hold.window(worker, lambda: time.sleep(0.05))
        assert window.retimed == 1 and window.request_s >= 0.1, "both tries' requests are counted"
        assert window.watch_s > 0 and window.probe_s >= 0
        assert hold.held_s >= window.request_s
        tally = lease.tally
        assert (tally.holds, tally.windows, tally.request_s) == (1, 1, window.request_s)
        assert tally.held_s == hold.held_s
    finally:
        worker.close()


def test_a_hold_is_never_taken_inside_a_step_and_the_holders_own_steps_pass() -> None:
    lease = TimingLease(gpu=False)
    with lease.step(), pytest.raises(RuntimeError, match="inside a step"), lease.hold():
        pass
    with lease.hold():
        with lease.step():  # the holder's own request to the judge's worker
            pass
        assert lease._steps == 0


def test_a_paused_worker_is_stopped_with_what_it_started_and_its_deadline_waits_for_it() -> None:
    worker = candidate_worker()
    try:
        pid = worker.status("worker_pid")
        pause_workers([worker], gpu_only=False)
        assert state(pid) == "T" and worker.paused
        answer: list[Any] = []
        waiting = threading.Thread(target=lambda: answer.append(worker.request(Ping(), 0.5, "pinging")))
        waiting.start()
        # Its half-second limit runs only while it runs: paused, it is still waited for.
        waiting.join(timeout=3.0)
        assert waiting.is_alive() and worker.alive
        worker.resume()
        waiting.join(60)
        assert answer == [Ack()]
        assert worker.paused_s() > 0.5
    finally:
        worker.close()


def test_on_a_gpu_only_the_processes_holding_it_are_paused(tmp_path: Path) -> None:
    solution = tmp_path / "with_child.py"
    solution.write_text(WITH_CHILD)
    worker = candidate_worker()
    try:
        worker.request(Prepare(), 120, "preparing")
        reply = worker.request(LoadSolution(str(solution), "all"), 120, "loading")
        assert reply == Ack(), reply
        pid = worker.status("worker_pid")
        child = next(p for p in worker_processes(worker) if p != pid)
        pause_workers([worker], gpu_only=True)  # the child holds no GPU: a compiler, say, goes on
        assert state(pid) == "T" and state(child) != "T"
        worker.resume()
        pause_workers([worker], gpu_only=False)  # on the CPU, everything it started
        assert (state(pid), state(child)) == ("T", "T")
        worker.resume()
        assert state(child) != "T"
    finally:
        worker.close()


def test_the_cpu_check_sees_another_process_spinning_and_not_one_asleep() -> None:
    spinning, sleeping = subprocess.Popen(SPIN), subprocess.Popen(SLEEP)
    probe = CpuActivity()
    try:
        watched = [spinning.pid, sleeping.pid]
        mark = probe.begin(watched)
        until(lambda: cpu_seconds([spinning.pid])[spinning.pid] > mark[spinning.pid] + 0.1, "spinning")
        check = probe.check(mark, set(), watched, set())
        assert check.shared and check.verified and f"pid {spinning.pid}" in check.others[0]
        mark = probe.begin([sleeping.pid])
        assert not probe.check(mark, set(), [sleeping.pid], set()).shared
        # The timed process's own CPU time is its own.
        mark = probe.begin(watched)
        until(lambda: cpu_seconds([spinning.pid])[spinning.pid] > mark[spinning.pid] + 0.1, "spinning")
        assert not probe.check(mark, {spinning.pid}, watched, set()).shared
    finally:
        for process in (spinning, sleeping):
            process.kill()
            process.wait()


# A solution whose import leaves a child process that spins: work beside a window, outside any request.
WITH_SPINNING_CHILD = WITH_CHILD.replace(repr(SLEEP), repr(SPIN))


def test_on_the_cpu_a_hold_pauses_the_judges_of_other_sessions_and_not_its_own(tmp_path: Path) -> None:
    """Another session's judge works outside steps as it starts (torch imported, the problem loaded): on
    the CPU that work would share the window. A hold pauses it, and leaves its own session's judge alone
    (the holder asks it for references and comparisons)."""
    solution = tmp_path / "spinning_child.py"
    solution.write_text(WITH_SPINNING_CHILD)
    busy, own, timed = candidate_worker(), candidate_worker(), candidate_worker()
    try:
        assert busy.request(LoadSolution(str(solution), "all"), 120, "loading") == Ack()
        child = next(p for p in worker_processes(busy) if p != busy.status("worker_pid"))
        lease = TimingLease(gpu=False)
        lease.register(busy, trusted=True, session="other")
        lease.register(own, trusted=True, session="mine")
        lease.register(timed, session="mine")
        with lease.hold(owner=timed) as hold:  # the session is the owner's
            assert state(child) == "T" and not own.paused
            with lease.step():  # the holder's own request to its judge
                assert own.request(Ping(), 60, "pinging") == Ack()
            _, window = hold.window(timed, lambda: time.sleep(0.3))
            assert window.exclusive and window.retimed == 0
        assert state(child) != "T" and not busy.paused
        # Without a session named, no judge is paused: the spinning child is seen, and the window flagged.
        with lease.hold() as hold:
            _, window = hold.window(timed, lambda: time.sleep(0.3))
        assert not window.exclusive and f"pid {child}" in " ".join(window.others)
        on_gpu = TimingLease(gpu=True, probe=Unverified("a test"))
        on_gpu.register(busy, trusted=True, session="other")
        with on_gpu.hold(session="mine"):  # on a GPU its device work is done in steps: never paused
            assert state(child) != "T" and not busy.paused
    finally:
        for worker in (busy, own, timed):
            worker.close()


def test_a_step_inside_a_step_passes_while_a_hold_waits() -> None:
    lease = TimingLease(gpu=False)
    inner_done, hold_taken = threading.Event(), threading.Event()

    def holder_thread() -> None:
        with lease.hold():
            hold_taken.set()

    def stepper_thread() -> None:
        with lease.step():
            holder.start()
            until(lambda: lease._holds_waiting == 1, "the hold waiting")
            with lease.step():  # a worker started (a step) while the thread's outer step is under way
                inner_done.set()
            assert not hold_taken.is_set()

    holder = threading.Thread(target=holder_thread, daemon=True)
    stepper = threading.Thread(target=stepper_thread, daemon=True)
    stepper.start()
    stepper.join(30)
    assert not stepper.is_alive() and inner_done.is_set(), "the inner step waited for the hold"
    holder.join(30)
    assert hold_taken.is_set() and lease._steps == 0


class Scripted:
    """A probe that reports the windows as told: shared for the first `shared` checks."""

    verified = True
    how = "scripted"

    def __init__(self, shared: int) -> None:
        self.shared = shared
        self.checks = 0

    def begin(self, watched: list[int]) -> None:
        return None

    def check(self, mark: Any, timed: set[int], watched: list[int], trusted: set[int]) -> WindowCheck:
        self.checks += 1
        shared = self.checks <= self.shared
        return WindowCheck(shared, True, ["pid 42 (0.50 s of CPU)"] if shared else [])

    def settle_s(self) -> float:
        return 0.0


def test_a_shared_window_is_timed_again_and_stays_flagged_past_the_bound() -> None:
    worker = candidate_worker()
    try:
        runs: list[int] = []
        lease = TimingLease(gpu=False, probe=Scripted(shared=1))
        with lease.hold() as hold:
            result, window = hold.window(worker, lambda: runs.append(1) or "measured")
        assert (result, len(runs), window.retimed, window.exclusive) == ("measured", 2, 1, True)
        lease = TimingLease(gpu=False, probe=Scripted(shared=100))
        with lease.hold() as hold:
            _, window = hold.window(worker, lambda: runs.append(1))
        assert window.retimed == MAX_RETIMES and not window.exclusive and window.others
        lease = TimingLease(gpu=False, probe=Scripted(shared=100))
        with lease.hold() as hold:  # a failed request is not a measurement: not timed again
            _, window = hold.window(worker, lambda: "failed", lambda result: False)
        assert window.retimed == 0 and not window.exclusive
    finally:
        worker.close()


class FakeNvml:
    """pynvml as far as GpuActivity uses it, with the samples a test gives it."""

    NVML_ERROR_NOT_FOUND = 6

    class NVMLError(Exception):
        def __init__(self, value: int) -> None:
            self.value = value

    def __init__(self, samples: list[tuple[int, int, int, int]]) -> None:
        self.samples = samples

    def nvmlDeviceGetProcessUtilization(self, handle: object, since_us: int) -> list[SimpleNamespace]:
        found = [
            SimpleNamespace(pid=pid, timeStamp=stamp, smUtil=sm, memUtil=memory)
            for pid, stamp, sm, memory in self.samples
            if stamp > since_us
        ]
        if not found:
            raise self.NVMLError(self.NVML_ERROR_NOT_FOUND)
        return found


def test_nvml_samples_of_another_process_in_the_window_make_it_shared() -> None:
    now = int(time.time() * 1e6)
    timed, judge, other = 100, 200, 300
    nvml = FakeNvml([(timed, now + 10, 90, 40), (judge, now + 20, 5, 5), (other, now - 10**6, 80, 10)])
    probe = GpuActivity(nvml, handle=None)
    assert probe.begin([]) >= now  # the window starts at the host's wall clock, as NVML stamps samples
    assert not probe.check(now, {timed}, [], {judge}).shared  # the other one ran before the window
    nvml.samples.append((other, now + 30, 3, 0))
    check = probe.check(now, {timed}, [], {judge})
    assert check.shared and check.verified and check.others == [f"pid {other} (SM 3 %, memory 0 %)"]
    assert not GpuActivity(FakeNvml([]), None).check(now, {timed}, [], set()).shared  # nothing ran
    skewed = GpuActivity(FakeNvml([(other, now + 3600 * 10**6, 50, 0)]), None)
    assert not skewed.check(now, {timed}, [], set()).verified


def test_a_build_ahead_is_nobodys_session() -> None:
    """A session opening beside a build ahead is not beside another session: it starts as one alone does."""
    lease = TimingLease(gpu=False)
    lease.register(SimpleNamespace(alive=True))  # type: ignore[arg-type]
    assert not lease.in_use()
    lease.register(SimpleNamespace(alive=True), trusted=True, session="a session")  # type: ignore[arg-type]
    assert lease.in_use()


@pytest.mark.parametrize(
    ("gpu", "trusted", "pausable"),
    [(False, False, True), (False, True, True), (True, False, True), (True, True, False)],
)
def test_a_worker_holds_may_pause_starts_in_a_step_and_is_known_by_its_pid(
    gpu: bool, trusted: bool, pausable: bool
) -> None:
    """Candidates' and builds' workers, and on the CPU the judge's too (other sessions' holds pause them),
    are spawned inside a step and waited for until their pid is known; a judge's worker on a GPU is not."""
    lease = TimingLease(gpu=gpu)
    seen: dict[str, object] = {}

    class Started(Stub):
        def wait_started(self) -> int:
            seen["waited in a step"] = lease._steps == 1
            return self.process.pid

    def spawn() -> WorkerProcess:
        seen["spawned in a step"] = lease._steps == 1
        return Started(os.getpid())  # type: ignore[return-value]

    worker = lease.started(spawn, trusted=trusted, session="a session")
    assert seen["spawned in a step"] is pausable
    assert seen.get("waited in a step") == (True if pausable else None)  # not waited for at all otherwise
    assert lease._steps == 0  # the step ended with the start
    assert lease._alive(trusted) == [worker] and lease.in_use()
