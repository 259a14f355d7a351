"""Baselines: eager PyTorch, torch.compile (default, and max-autotune-no-cudagraphs) and the task's EXPERT.

A speedup is a ratio measured side by side, so baselines are timed in the session that times the
candidates, by their protocol (same plan, same rotation and perturbation of input sets, same device),
in a worker of their own so that a slow or failing compilation costs that baseline only. Each is timed
before the first candidate needs it and again every DRIFT_EVERY_CANDIDATES candidates or DRIFT_EVERY_S
seconds; a move beyond DRIFT_TOLERANCE is reported, and speedups use the latest measurement. A time
from another session (kept on disk) is shown beside it and seeds nothing but the call limits: it never
replaces a measurement, and a noisy one is not kept.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from cudasmith.errors import UsageError
from cudasmith.harness.options import PROBLEM_LOAD_TIMEOUT_S
from cudasmith.harness.walls.process import WorkerFailure, WorkerProcess
from cudasmith.harness.wire.messages import Failed, LoadProblem, Ping, Time, TimeSpec
from cudasmith.harness.wire.results import BaselineEntry, PreviousTime, Timing
from cudasmith.harness.wire.status import Status
from cudasmith.jsontypes import JsonDict
from cudasmith.runtime.cache import cache_dir, content_key, write_atomically
from cudasmith.runtime.seal import seal, unseal
from cudasmith.tasks.problem import Config
from cudasmith.timestamps import now_iso

if TYPE_CHECKING:
    from cudasmith.harness.lease import Hold, Window

BASELINES = {
    "eager": "eager PyTorch",
    "compile": "torch.compile",
    "compile-max-autotune": "torch.compile max-autotune-no-cudagraphs",
    "expert": "expert",
}
# max-autotune benchmarks many kernels for every operator (minutes per config): asked for, not by default.
DEFAULT_CUDA = ("eager", "compile", "expert")
# On the CPU, torch.compile builds C++ for each config (tens of seconds): asked for, not by default.
DEFAULT_CPU = ("eager", "expert")
# Timing one baseline on one config with its compilation (starting the worker: PROBLEM_LOAD_TIMEOUT_S).
BASELINE_TIMEOUT_S = 1800.0
# What the MAC of a cached baseline time says it is (runtime/seal.py).
BASELINE_PURPOSE = "baseline-time"
# Re-time a config's baselines after this many candidates were timed against them, or this long.
DRIFT_EVERY_CANDIDATES = 8
DRIFT_EVERY_S = 300.0
# A baseline whose median moved by more than this (and more than its confidence intervals allow) drifted.
DRIFT_TOLERANCE = 0.05
# A measurement whose median's relative standard error exceeds this is too noisy to keep on disk.
NOISY_REL_STDERR = 0.02


def default_baselines(device: str) -> tuple[str, ...]:
    """The baselines timed when none are asked for."""
    return DEFAULT_CUDA if device.startswith("cuda") else DEFAULT_CPU


def parse_baselines(text: str) -> tuple[str, ...]:
    """'eager,compile' → ('eager', 'compile'); eager is always timed (speedups are against it)."""
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in BASELINES]
    if unknown:
        raise UsageError(f"unknown baseline {unknown[0]!r}; choose from {', '.join(BASELINES)}")
    return ("eager", *(n for n in names if n != "eager"))


@dataclass
class BaselineTime:
    """One baseline on one config as this session measured it (or why it could not)."""

    name: str
    measurement: Timing | None = None
    error: str | None = None
    measured_at: str = ""
    measured_monotonic: float = 0.0
    candidates_since: int = 0
    # The same baseline from an earlier session (never used for a speedup): median and when.
    previous: PreviousTime | None = None
    drift: str | None = None
    history_ms: list[float] = field(default_factory=list)
    # The window it was timed in (lease.py): a time from a shared window gives no speedup.
    window: Window | None = None

    @property
    def median_ms(self) -> float | None:
        return self.measurement.median_ms if self.measurement else None

    def entry(self) -> BaselineEntry:
        """What a verdict says of it: time, interval, method, how and when it was measured."""
        if self.measurement is None:
            return BaselineEntry(error=self.error or "not timed")
        return BaselineEntry(
            time_ms=self.measurement.median_ms,
            ci95_ms=self.measurement.ci95_ms,
            method=self.measurement.method,
            measured="in this session, by the candidates' protocol",
            measured_at=self.measured_at,
            times_measured=len(self.history_ms),
            exclusive=self.window is None or self.window.exclusive,
            previous_session=self.previous,
            drift=self.drift,
        )


class SessionBaselines:
    """The baselines of one session: a worker that times them, and what it measured, per config."""

    def __init__(
        self,
        start_worker: Callable[[], WorkerProcess],
        names: tuple[str, ...],
        identity: str,
    ) -> None:
        self._start_worker = start_worker
        self.names = names
        self.identity = identity  # problem, device, versions and plan: what a time on disk depends on
        self._worker: WorkerProcess | None = None
        self._load_id: int | None = None
        self._load_sent = False
        self.times: dict[tuple[str, int], BaselineTime] = {}

    def start(self, load: bool = True) -> None:
        """Start the baseline worker now, and (`load`) its load of the problem on its device, without
        waiting (it starts beside the candidates)."""
        if self._worker is None or not self._worker.alive:
            self._worker = self._start_worker()
            self._load_sent = False
        if load and not self._load_sent:
            self._load_id = self._worker.send(LoadProblem())
            self._load_sent = True

    def imported(self) -> None:
        """Wait for the baseline worker, if started and not yet asked to load, to have made its imports (it
        answers a ping; no device used). A failure is left to its first use."""
        if self._worker is None or self._load_sent:
            return
        with contextlib.suppress(WorkerFailure):
            self._worker.request(Ping(), PROBLEM_LOAD_TIMEOUT_S, "starting the baseline worker")

    def ready(self) -> None:
        """Wait for the baseline worker, if started, to have loaded the problem (a failure is left to its
        first use)."""
        if self._worker is None:
            return
        with contextlib.suppress(WorkerFailure):
            self._ready()

    def _ready(self) -> WorkerProcess:
        """The baseline worker with the problem loaded (started now if it is not running)."""
        self.start()
        worker = self._worker
        assert worker is not None
        if self._load_id is not None:
            load_id, self._load_id = self._load_id, None
            try:
                reply = worker.wait(load_id, PROBLEM_LOAD_TIMEOUT_S, "loading the problem for baselines")
            except WorkerFailure:
                self.close()
                raise
            if isinstance(reply, Failed):
                self.close()
                raise WorkerFailure(
                    Status.parse(reply.status, Status.RUNTIME_ERROR), reply.reason or "failed to load"
                )
        return worker

    def _path(self, name: str, config: Config) -> Path:
        key = content_key(json.dumps(config, sort_keys=True), name, self.identity)
        return cache_dir("baselines") / f"{key}.json"

    def _stale(self, found: BaselineTime) -> bool:
        return (
            found.candidates_since >= DRIFT_EVERY_CANDIDATES
            or time.monotonic() - found.measured_monotonic >= DRIFT_EVERY_S
        )

    def previous_ms(self, config: Config) -> float | None:
        """Eager PyTorch's time from an earlier session, if kept: a seed for call limits, nothing more."""
        kept = self._kept(self._path("eager", config))
        return kept.time_ms if kept is not None else None

    def _kept(self, path: Path) -> PreviousTime | None:
        """A cached baseline time the judge wrote (one failing its MAC is not used), or None."""
        try:
            kept = unseal(json.loads(path.read_text()), BASELINE_PURPOSE)
            return PreviousTime(float(kept["median_ms"]), str(kept["measured_at"])) if kept else None
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def for_config(
        self,
        spec: TimeSpec,
        label: str,
        hold: Hold,
        progress: Callable[[str], None] | None = None,
        counted: bool = True,
    ) -> dict[str, BaselineTime]:
        """Every baseline of one config, timed now (in a window of `hold`, the device held alone) when
        this session has no fresh measurement of it. `counted`: for a candidate (a measurement is taken
        again after DRIFT_EVERY_CANDIDATES of them); the session timing ahead is not one."""
        found = {}
        for name in self.names:
            key = (name, spec.config_index)
            current = self.times.get(key)
            if current is None or self._stale(current):
                if progress is not None:
                    progress(f"timing {BASELINES[name]} on {label}")
                current = self._measure(name, spec, label, current, hold)
                self.times[key] = current
            current.candidates_since += counted
            found[name] = current
        return found

    def _measure(
        self, name: str, spec: TimeSpec, label: str, before: BaselineTime | None, hold: Hold
    ) -> BaselineTime:
        what = f"timing {BASELINES[name]} on {label}"
        result = BaselineTime(name)
        if before is not None:
            result.history_ms = list(before.history_ms)
            result.previous = before.previous
        request = replace(spec, baseline=name, retain_bytes=0)
        try:
            worker = self._ready()
            reply, result.window = hold.window(
                worker,
                lambda: worker.request(Time(hold.timed(request)), BASELINE_TIMEOUT_S, what),
                lambda reply: not isinstance(reply, Failed),
            )
        except WorkerFailure as failure:
            self.close()
            result.error = str(failure)
            return result
        if isinstance(reply, Failed):
            result.error = reply.reason or "failed"
            return result
        measurement = Timing.of(reply.measurement, result.window.exclusive)
        result.measurement = measurement
        result.measured_at = now_iso()
        result.measured_monotonic = time.monotonic()
        result.history_ms.append(measurement.median_ms)
        if before is not None and before.measurement is not None:
            result.drift = _drift(before.measurement, measurement)
        path = self._path(name, spec.config)
        if result.previous is None:
            result.previous = self._kept(path)
        if measurement.rel_stderr <= NOISY_REL_STDERR and result.window.exclusive:
            kept: JsonDict = {"median_ms": measurement.median_ms, "measured_at": result.measured_at}
            write_atomically(path, json.dumps(seal(kept, BASELINE_PURPOSE)).encode())
        return result

    def ask_to_exit(self) -> None:
        """Ask the baseline worker, if one runs, to exit (close() waits for it)."""
        if self._worker is not None:
            self._worker.ask_to_exit()

    def close(self) -> None:
        """Stop the baseline worker, if one runs."""
        if self._worker is not None:
            self._worker.close()
            self._worker = None


def _drift(before: Timing, after: Timing) -> str | None:
    """How far a baseline moved between two measurements of this session, when beyond noise."""
    old, new = before.median_ms, after.median_ms
    if old <= 0:
        return None
    change = new / old - 1
    low_old, high_old = before.ci95_ms
    low_new, high_new = after.ci95_ms
    overlap = low_new <= high_old and low_old <= high_new
    if abs(change) > DRIFT_TOLERANCE and not overlap:
        return (
            f"moved {change:+.1%} since its previous measurement in this session ({old:.4g} → {new:.4g} ms)"
        )
    return None
