"""The local executor: one lane per GPU of this machine (each judge session's workers pinned to its
GPU), and a pool of build workers on the host's CPUs that compile candidates ahead."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from functools import partial

from cudasmith.errors import UsageError
from cudasmith.exec.base import Executor
from cudasmith.exec.jobs import Job
from cudasmith.exec.lane import JudgeFactory, Lane
from cudasmith.exec.nvml import BusySampler
from cudasmith.exec.prebuild import BuildResult, build, build_target, default_build_workers
from cudasmith.harness.options import default_in_flight
from cudasmith.harness.session import Judge
from cudasmith.harness.verdict import Verdict
from cudasmith.harness.walls.environment import visible_gpu
from cudasmith.tempdirs import owned_tempdir


def lane_devices(device: str, gpus: str | None = None) -> list[str]:
    """The lanes for `device` and `gpus`: 'cpu' is one lane; 'cuda:N' that GPU; 'cuda' every visible
    GPU, or those `gpus` names ('all', a count such as '2' for the first two, or indices such as '1,3')."""
    from cudasmith.device import usable_device

    device = usable_device(device)
    if device == "cpu":
        if gpus not in (None, "all"):
            raise UsageError("--gpus needs a CUDA device; the CPU has one lane")
        return ["cpu"]
    if device != "cuda":
        if gpus not in (None, "all", device.removeprefix("cuda:")):
            raise UsageError(f"--device {device} is one GPU; give --device cuda with --gpus {gpus}")
        return [device]
    import torch

    count = torch.cuda.device_count()
    if gpus in (None, "all"):
        return [f"cuda:{i}" for i in range(count)]
    try:
        indices = [int(part) for part in gpus.split(",")]
    except ValueError:
        raise UsageError(f"--gpus must be 'all', a count or indices such as 1,3, not {gpus!r}") from None
    if "," not in gpus:
        if not 0 < indices[0] <= count:
            raise UsageError(f"--gpus {gpus}: a count from 1 to {count}, the GPUs visible here")
        return [f"cuda:{i}" for i in range(indices[0])]
    if any(i < 0 or i >= count for i in indices) or len(set(indices)) != len(indices):
        raise UsageError(f"--gpus {gpus}: this machine has GPUs 0 to {count - 1}, each named once")
    return [f"cuda:{i}" for i in indices]


class LocalLane:
    """A lane of this process: its judge session runs here, its workers on the lane's device."""

    def __init__(self, device: str, factory: JudgeFactory = Judge, in_flight: int | None = None) -> None:
        self.name = device
        self.lane = Lane(device, factory, in_flight)

    def judge(self, job: Job) -> Verdict:
        return self.lane.judge(job)

    def counters(self) -> dict[str, int]:
        return {"sessions": self.lane.sessions_opened, "restarts": self.lane.restarts}

    def close_idle(self, idle_s: float) -> int:
        return self.lane.close_idle(idle_s)

    def close(self) -> None:
        self.lane.close()


class LocalExecutor(Executor):
    """Every lane in this process; builds in sandboxed CPU workers."""

    kind = "local"

    def __init__(
        self,
        devices: list[str],
        build_workers: int | None = None,
        factory: JudgeFactory = Judge,
        in_flight: int | None = None,
    ) -> None:
        """`devices`: one lane each ('cuda:0', 'cuda:1' or 'cpu'); `build_workers`: candidates built
        ahead at once (0: none; default from the cores the lanes leave); `factory`: the lanes' sessions;
        `in_flight`: candidates each lane judges at once (default from the cores the lanes share)."""
        in_flight = in_flight or default_in_flight(devices[0], len(devices))
        workers = default_build_workers(len(devices)) if build_workers is None else build_workers
        self._scratch = owned_tempdir("cudasmith-build-")
        builder = partial(self._build_one, target=build_target(devices)) if workers else None
        self._samplers: dict[str, BusySampler] = {}
        for device in devices:
            if device.startswith("cuda"):
                with contextlib.suppress(Exception):  # no pynvml or no driver: lane occupancy only
                    gpu = visible_gpu(
                        int(device.partition(":")[2] or 0), os.environ.get("CUDA_VISIBLE_DEVICES")
                    )
                    self._samplers[device] = BusySampler(gpu)
        self._since = time.monotonic()
        lanes = [LocalLane(d, factory, in_flight) for d in devices]
        super().__init__(lanes, builder, workers, in_flight)

    def _build_one(self, job: Job, target: str | None) -> BuildResult:
        return build(job, self._scratch, target)

    def gpu_utilization(self) -> dict[str, float]:
        found = {
            device: sampler.fraction(self._first_job or self._since)
            for device, sampler in self._samplers.items()
        }
        return {device: value for device, value in found.items() if value is not None}

    def close(self) -> None:
        super().close()
        for sampler in self._samplers.values():
            sampler.close()
        shutil.rmtree(self._scratch, ignore_errors=True)
