"""NVML's utilization.gpu, polled in a thread: the share of each driver sampling window (1/6 s to 1 s,
by GPU) in which at least one kernel ran, not how many SMs were busy."""

from __future__ import annotations

import statistics
import threading
import time

from cudasmith.hardware import nvml_gpu

POLL_S = 0.1
MEANING = (
    f"mean of NVML utilization.gpu polled every {POLL_S} s: the share of each driver sampling window "
    "(1/6 s to 1 s, by GPU) in which at least one kernel ran, not how many SMs were busy"
)


class BusySampler:
    """One GPU's utilization, polled until close(); the mean over any window of the run."""

    def __init__(self, gpu: str) -> None:
        """`gpu`: NVML's index of the GPU, or its UUID (GPU-…), as CUDA_VISIBLE_DEVICES names it."""
        self._nvml, self.handle = nvml_gpu(gpu)
        name = self._nvml.nvmlDeviceGetName(self.handle)
        self.gpu_name = name.decode() if isinstance(name, bytes) else str(name)  # bytes in older bindings
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True, name="cudasmith-nvml")
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.wait(POLL_S):
            rates = self._nvml.nvmlDeviceGetUtilizationRates(self.handle)
            self.samples.append((time.monotonic(), int(rates.gpu)))

    def fraction(self, start: float, end: float | None = None) -> float | None:
        """The mean utilization between two monotonic times, as a fraction; None before any sample."""
        end = time.monotonic() if end is None else end
        window = [u for t, u in list(self.samples) if start <= t <= end]
        return statistics.fmean(window) / 100 if window else None

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._nvml.nvmlShutdown()
