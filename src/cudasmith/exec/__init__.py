"""Where candidates are judged: lanes of judge sessions (one per GPU) fed by a queue, with builds ahead
on CPUs; in this process (`local`) or as Ray actors and tasks (`ray`). See base.py. A running server's
lanes (serve/lanes.py) are a `LaneChoice` too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from cudasmith.errors import UsageError
from cudasmith.exec.jobs import Job, ProblemRef
from cudasmith.hardware import device_name
from cudasmith.harness.version import harness_version
from cudasmith.jsontypes import JsonDict
from cudasmith.lazy import lazy_exports

if TYPE_CHECKING:
    from cudasmith.exec.base import Executor, ExecutorStats, LaneStats
    from cudasmith.exec.lane import JudgeFactory

EXECUTORS = ("local", "ray")
# Imported when first asked for: the executors bring the judge session, and with it torch, which a
# process that only sends builds ahead (exec.ahead, exec.prebuild) does without until it judges.
__getattr__ = lazy_exports(
    __name__,
    {name: "cudasmith.exec.base" for name in ("Executor", "ExecutorStats", "LaneStats")},
)


__all__ = [
    "EXECUTORS",
    "Executor",
    "ExecutorStats",
    "Job",
    "LaneChoice",
    "LaneStats",
    "Lanes",
    "ProblemRef",
    "make_executor",
]


class LaneChoice(Protocol):
    """Where a run's candidates are judged, and by which judge: lanes of this machine or of a Ray cluster
    (`Lanes`), or those of a running server (serve.lanes.ServerLanes)."""

    def check(self, device: str) -> None:
        """Refuse a bad choice in one line, before a run is stored."""
        ...

    def make(self, device: str, in_flight: int | None = None) -> Executor:
        """The executor that judges on them."""
        ...

    def device_name(self, device: str) -> str:
        """What verdicts call the device they judge on."""
        ...

    def judge_version(self) -> str:
        """The version of the judge they run (harness.version.harness_version)."""
        ...

    def run_options(self) -> JsonDict:
        """What a run keeps of them, so that it resumes on the same ones."""
        ...


@dataclass(frozen=True)
class Lanes:
    """Where candidates are judged, as a command's options say: the executor (local or ray), the GPUs,
    a Ray cluster's address, the build workers."""

    executor: str = "local"
    gpus: str | None = None
    address: str | None = None
    build_workers: int | None = None

    def check(self, device: str) -> None:
        """Refuse a bad choice in one line, before a run is stored."""
        check_executor(self.executor, device, self.gpus, self.address)

    def make(
        self, device: str, in_flight: int | None = None, factory: JudgeFactory | None = None
    ) -> Executor:
        """The executor; `in_flight`: candidates per lane at once (EvalOptions.in_flight); `factory`: what
        opens the local lanes' sessions (tests pass a scripted judge)."""
        return make_executor(
            self.executor, device, self.gpus, self.address, self.build_workers, factory, in_flight
        )

    def device_name(self, device: str) -> str:
        """What verdicts call `device`, as this machine names it."""
        return device_name(device)

    def judge_version(self) -> str:
        """This judge's version."""
        return harness_version()

    def run_options(self) -> JsonDict:
        """Nothing: a resumed run may go on on other lanes of the same judge."""
        return {}


def check_executor(
    kind: str, device: str, gpus: str | None = None, address: str | None = None
) -> list[str] | None:
    """Refuse a bad choice of lanes in one line before any work starts; the local lanes' devices."""
    if kind not in EXECUTORS:
        raise UsageError(f"unknown executor {kind!r}; known: {', '.join(EXECUTORS)}")
    if address is not None and kind != "ray":
        raise UsageError("--address is the Ray cluster's: give it with --executor ray")
    if kind == "local":
        from cudasmith.exec.local import lane_devices

        return lane_devices(device, gpus)
    if device not in ("cuda", "cpu"):
        raise UsageError(f"--executor ray places lanes itself: give --device cuda or cpu, not {device}")
    if gpus not in (None, "all") and (not gpus.isdigit() or int(gpus) < 1):
        raise UsageError("with --executor ray, --gpus is a count (Ray picks which GPUs)")
    return None


def make_executor(
    kind: str = "local",
    device: str | None = None,
    gpus: str | None = None,
    address: str | None = None,
    build_workers: int | None = None,
    factory: JudgeFactory | None = None,
    in_flight: int | None = None,
) -> Executor:
    """An executor of `kind` for `device` ('cuda', 'cuda:N' or 'cpu'): local lanes on the GPUs `gpus`
    names (default all visible), or Ray lanes on the cluster at `address` (default a local instance).
    `factory`: what opens the local lanes' sessions (tests pass a scripted judge); `in_flight`:
    candidates each lane judges at once (default from the cores and GPU memory)."""
    device = device or _default()
    devices = check_executor(kind, device, gpus, address)
    if devices is not None:
        from cudasmith.exec.local import LocalExecutor
        from cudasmith.harness.session import Judge

        return LocalExecutor(devices, build_workers, factory or Judge, in_flight)
    if factory is not None:
        raise UsageError("a scripted judge runs in this process: use the local executor")
    from cudasmith.exec.ray_executor import RayExecutor

    lanes = None if gpus in (None, "all") else int(gpus)
    return RayExecutor(device, lanes, address, build_workers, in_flight)


def _default() -> str:
    from cudasmith.device import default_device

    return default_device()
