"""The judge's own worker seen from a session: the problem loaded and described, reference outputs,
comparisons of candidates' outputs with them, and the device's peaks.

It is shared by the candidates in flight: each request is a step of the timing lease (it may use the
device) and the worker answers one at a time. Its failures are the harness's (or the problem's), never a
candidate's: they are raised as HarnessError, a config too large for the worker's memory named with its
size.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cudasmith.device import DevicePeaks, load_peaks
from cudasmith.errors import HarnessError
from cudasmith.harness.options import PROBLEM_LOAD_TIMEOUT_S
from cudasmith.harness.walls.memory import too_large
from cudasmith.harness.walls.process import WorkerFailure, WorkerProcess
from cudasmith.harness.wire.messages import (
    Compare,
    Compared,
    CompareItem,
    Comparison,
    Describe,
    Described,
    Failed,
    InputSpec,
    LoadProblem,
    MeasurePeaks,
    ProblemLoaded,
    Reference,
    ReferenceNotes,
    Request,
)
from cudasmith.harness.wire.outputs import OutputRef
from cudasmith.harness.wire.results import ConfigDescription
from cudasmith.tasks.problem import Config

if TYPE_CHECKING:
    # Types only: lease.py imports witnesses (exclusive.py), and an import back would close a cycle.
    from cudasmith.harness.lease import Hold, TimingLease

# The judge's own requests: computing and comparing outputs (float64 references of large configs take
# seconds on a CPU); measuring the device (first time only). Loading the problem: PROBLEM_LOAD_TIMEOUT_S.
JUDGE_CALL_TIMEOUT_S = 600.0
PEAKS_TIMEOUT_S = 300.0


class Oracle:
    """The session's reference worker: what it loaded and described, and what candidates ask of it."""

    def __init__(
        self, worker: WorkerProcess, lease: TimingLease, configs: list[Config], load: bool = True
    ) -> None:
        """`worker`: a reference worker just started; it describes the configs at once (on meta tensors: no
        device), then loads the problem on its device (`load`), or when `send_load()` asks."""
        self.worker = worker
        self.lease = lease
        self._describe_id = worker.send(Describe(configs))
        self._load_id: int | None = None
        self._described = False
        self.described: list[ConfigDescription] = []
        self.call_seconds: dict[int, float] = {}
        self.peaks: DevicePeaks | None = None
        self.peaks_error: str | None = None
        self._peaks_asked = False
        self._peaks_remeasured = False
        self._loaded: ProblemLoaded | HarnessError | None = None
        self._load_lock = threading.Lock()
        self._lock = threading.Lock()
        if load:
            self.send_load()

    def send_load(self) -> None:
        """Ask the worker to load the problem on its device (a CUDA context: the start's device work)."""
        with self._load_lock:
            self._send_load()

    def _send_load(self) -> None:
        if self._load_id is None:
            self._load_id = self.worker.send(LoadProblem())

    def wait_described(self) -> None:
        """Wait for the configs' description alone (it uses no device); a failure is left to loaded()."""
        with self._load_lock:
            if self._loaded is None and not self._described:
                try:
                    self._describe()
                except HarnessError as failure:
                    self._loaded = failure

    def loaded(self) -> ProblemLoaded:
        """Wait for the problem to be loaded (the device named) and described; once: a later call gives
        the same answer, or raises the same failure."""
        with self._load_lock:
            if self._loaded is None:
                try:
                    self._loaded = self._load()
                except HarnessError as failure:
                    self._loaded = failure
            if isinstance(self._loaded, HarnessError):
                raise self._loaded
            return self._loaded

    def _load(self) -> ProblemLoaded:
        self._describe()
        self._send_load()
        assert self._load_id is not None
        reply = self._wait(self._load_id, "loading the problem")
        assert isinstance(reply, ProblemLoaded)
        return reply

    def _describe(self) -> None:
        if not self._described:
            reply = self._wait(self._describe_id, "describing the configs")
            assert isinstance(reply, Described)
            self.described, self._described = reply.configs, True

    def _wait(self, request_id: int, what: str) -> Any:
        """The answer to one of the start's requests (in the order they were sent), or the harness's failure."""
        try:
            reply = self.worker.wait(request_id, PROBLEM_LOAD_TIMEOUT_S, what)
        except WorkerFailure as failure:
            raise self.failed(failure) from None
        if isinstance(reply, Failed):
            raise HarnessError(f"the reference failed while {what}: {reply.reason}")
        return reply

    def ask(
        self, request: Request, timeout_s: float, what: str, config: tuple[int, str] | None = None
    ) -> Any:
        """A request (a step of the lease), answered or raised as the harness's failure; `config`: the
        index and name of the config it is about."""
        try:
            with self.lease.step(self.worker):
                reply = self.worker.request(request, timeout_s, what)
        except WorkerFailure as failure:
            raise self.failed(failure, config) from None
        if isinstance(reply, Failed):
            raise HarnessError(f"the reference failed while {what}: {reply.reason}")
        return reply

    def failed(self, failure: WorkerFailure, config: tuple[int, str] | None = None) -> HarnessError:
        """The worker gave no answer (its failure says while doing what); a config too large for the
        worker's memory is named with its size."""
        if failure.over_memory and config is not None:
            index, name = config
            described = self.described[index] if index < len(self.described) else None
            return HarnessError(too_large(name, described, self.worker.memory_limit))
        return HarnessError(f"the reference failed: {failure}")

    def reference(self, spec: InputSpec, name: str) -> ReferenceNotes:
        """The reference for one input set (computed once per session) and what it noticed."""
        what = f"running the reference on {name}"
        notes: ReferenceNotes = self.ask(
            Reference(spec), JUDGE_CALL_TIMEOUT_S, what, (spec.config_index, name)
        )
        if notes.call_seconds is not None:
            self.call_seconds[spec.config_index] = notes.call_seconds
        return notes

    def compare(
        self, items: list[tuple[InputSpec, list[OutputRef]]], token: str, rechecks: bool = False
    ) -> list[Comparison]:
        """A candidate's exported outputs (its worker's `token`) against the reference, per input set
        (`rechecks`: timed calls', see messages.Compare)."""
        request = Compare(token, [CompareItem(spec, outputs) for spec, outputs in items], rechecks)
        reply: Compared = self.ask(
            request, JUDGE_CALL_TIMEOUT_S * max(1, len(items) // 8), "comparing outputs"
        )
        if len(reply.results) != len(items):
            raise HarnessError("the judge's worker answered a comparison with the wrong number of results")
        return reply.results

    def ensure_peaks(self, hold: Hold, progress: Callable[[str], None]) -> None:
        """The device's peaks, measured (or read) once per session, in a window of `hold`."""
        if not self._peaks_asked:
            self._peaks_asked = True
            self._measure_peaks(hold, False, progress)

    def remeasure_peaks(self, candidate: WorkerProcess, progress: Callable[[str], None]) -> bool:
        """Measure the peaks again (once per session, after a baseline beat them), with the device held
        alone (`candidate` paused too); whether that gave any."""
        with self._lock:
            if self._peaks_remeasured:
                return False
            self._peaks_remeasured = True
        with self.lease.hold(owner=candidate) as hold:
            self._measure_peaks(hold, True, progress)
        return self.peaks is not None

    def _measure_peaks(self, hold: Hold, remeasure: bool, progress: Callable[[str], None]) -> None:
        # Peaks measured before (and sealed by the judge) are read here: no window, no worker, no words
        # about measuring what is not measured.
        kept = None if remeasure else load_peaks(name=self.loaded().device_name)
        if kept is not None:
            self.peaks = kept
            return
        progress("measuring the device's peaks")
        request = MeasurePeaks(remeasure)
        try:
            reply, _ = hold.window(
                self.worker, lambda: self.ask(request, PEAKS_TIMEOUT_S, "measuring the device")
            )
            self.peaks = reply.peaks
        except HarnessError as error:
            self.peaks_error = str(error)

    def ask_to_exit(self) -> None:
        """Ask the judge's worker to exit (close() waits for it)."""
        self.worker.ask_to_exit()

    def close(self) -> None:
        self.worker.close()
