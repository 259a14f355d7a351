"""The Ray executor: each lane a Ray actor holding one judge session on the GPU Ray gave it
(`num_gpus=1`; Ray sets its CUDA_VISIBLE_DEVICES, which the session's workers inherit), builds as Ray
tasks on CPUs, verdicts back to the driver, which alone writes the run store.

Ray places the actors and tasks; this module only asks for them. Without an address, a Ray instance
of this machine is started for the run and stopped after it; with one (`ray://…` or `host:port`), the
driver joins that cluster and leaves it running. Every node needs cudasmith (and torch) installed;
problems and solutions travel as text, so no shared filesystem is needed. Each node keeps its own
build cache (CUDASMITH_CACHE there), so a build helps a lane on the node it ran on.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
from typing import Any

from cudasmith.errors import HarnessError, UsageError
from cudasmith.exec.base import Executor
from cudasmith.exec.jobs import Job
from cudasmith.exec.prebuild import BUILD_TIMEOUT_S, BuildResult, build
from cudasmith.harness.options import default_in_flight
from cudasmith.harness.verdict import Verdict
from cudasmith.jsontypes import JsonDict
from cudasmith.tempdirs import owned_tempdir

# How long a lane actor's idle sessions are asked for before the question is dropped (it is asked again).
CLOSE_IDLE_WAIT_S = 30.0
# One start-up message is enough: Ray's own logs stay in its session folder.
RAY_INIT = {"include_dashboard": False, "log_to_driver": False, "logging_level": "error"}


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UsageError("--executor ray needs Ray: pip install 'cudasmith[ray]'") from None
    return ray


class LaneActor:
    """A lane inside a Ray worker (made an actor by RayExecutor, with the GPU Ray assigns it)."""

    def __init__(self, device: str, in_flight: int) -> None:
        from cudasmith.exec.lane import Lane

        self.lane = Lane(device, in_flight=in_flight)

    def target(self) -> str | None:
        """The NVRTC target of this lane's GPU (builds are made for it), None on the CPU."""
        if self.lane.device == "cpu":
            return None
        from cudasmith.runtime.arch import device_arch

        return device_arch()

    def judge(self, job: Job) -> JsonDict:
        """The verdict, as JSON (it crosses to the driver's process)."""
        return self.lane.judge(job).to_dict()

    def counters(self) -> dict[str, int]:
        return {"sessions": self.lane.sessions_opened, "restarts": self.lane.restarts}

    def close_idle(self, idle_s: float) -> int:
        return self.lane.close_idle(idle_s)

    def close(self) -> None:
        self.lane.close()


def _build_task(job: Job, target: str | None) -> BuildResult:
    scratch = owned_tempdir("cudasmith-build-")
    try:
        return build(job, scratch, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


class RayLane:
    """The driver's handle on one lane actor (which judges its candidates in flight at once, one thread
    each); an actor that died is replaced once per candidate, by the first of them to see it die."""

    def __init__(self, index: int, make: Any) -> None:
        self.name = f"ray:{index}"
        self._make = make
        self.actor = make()
        self.replaced = 0
        self._lock = threading.Lock()

    def judge(self, job: Job) -> Verdict:
        ray = _ray()
        actor = self.actor
        try:
            return Verdict.from_dict(ray.get(actor.judge.remote(job)))
        except ray.exceptions.RayActorError:
            with self._lock:
                if self.actor is actor:
                    self.replaced += 1
                    self.actor = self._make()
                actor = self.actor
            return Verdict.from_dict(ray.get(actor.judge.remote(job)))
        except ray.exceptions.RayTaskError as error:
            cause = error.as_instanceof_cause()
            if isinstance(cause, HarnessError):
                raise HarnessError(str(cause).splitlines()[-1]) from None
            raise

    def counters(self) -> dict[str, int]:
        counters = _ray().get(self.actor.counters.remote())
        return {**counters, "restarts": counters["restarts"] + self.replaced}

    def close_idle(self, idle_s: float) -> int:
        # Bounded: an actor whose every slot judges takes the call only when one is free.
        return int(_ray().get(self.actor.close_idle.remote(idle_s), timeout=CLOSE_IDLE_WAIT_S))

    def close(self) -> None:
        ray = _ray()
        with contextlib.suppress(Exception):  # an actor that is gone or stuck: Ray's kill ends its process
            ray.get(self.actor.close.remote(), timeout=60)
        ray.kill(self.actor)


class RayExecutor(Executor):
    """Lanes as Ray actors, one per GPU (or one on the CPU); builds as Ray CPU tasks."""

    kind = "ray"

    def __init__(
        self,
        device: str,
        lanes: int | None = None,
        address: str | None = None,
        build_workers: int | None = None,
        in_flight: int | None = None,
    ) -> None:
        """`device`: 'cuda' (one lane per GPU of the cluster, or `lanes` of them) or 'cpu' (`lanes`,
        default 1); `address`: a running cluster's, None to start a local instance for this executor;
        `in_flight`: candidates each lane judges at once (default from this machine's cores and GPU)."""
        ray = _ray()
        self._started_ray = not ray.is_initialized()
        if self._started_ray:
            ray.init(address=address, **RAY_INIT)
        on_gpu = device == "cuda"
        available = int(ray.cluster_resources().get("GPU", 0)) if on_gpu else 0
        count = lanes or (available if on_gpu else 1)
        if on_gpu and available < count:
            self._shutdown()
            raise UsageError(f"the Ray cluster has {available} GPUs; {count} lanes asked for")
        in_flight = in_flight or default_in_flight(device)
        # A lane holds no CPU of Ray's: builds, which do, must never wait for lanes that wait for them. It
        # takes as many calls at once as it has candidates in flight (a threaded actor).
        actor = ray.remote(num_gpus=1 if on_gpu else 0, num_cpus=0, max_concurrency=in_flight)(LaneActor)
        lane_device = "cuda" if on_gpu else "cpu"
        backends = [RayLane(i, lambda: actor.remote(lane_device, in_flight)) for i in range(count)]
        self._target = ray.get(backends[0].actor.target.remote())
        self._build_task = ray.remote(num_cpus=1)(_build_task)
        cpus = int(ray.cluster_resources().get("CPU", 1))
        workers = max(1, cpus) if build_workers is None else build_workers
        super().__init__(backends, self._build_remote, workers, in_flight)

    def _build_remote(self, job: Job) -> BuildResult:
        # Bounded: a build Ray cannot place (no free CPU anywhere) must not hold its candidate back.
        return _ray().get(self._build_task.remote(job, self._target), timeout=2 * BUILD_TIMEOUT_S)

    def _shutdown(self) -> None:
        if self._started_ray:
            _ray().shutdown()

    def close(self) -> None:
        super().close()
        self._shutdown()
