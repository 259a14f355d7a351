"""Whether a call's output is ready when forward returns, on the caller's stream.

A consumer of the output (the next PyTorch operator) runs on the caller's current stream. Work that the
solution left on a side stream, which the caller's stream never waits for, may still be running then:
a race that a judge which synchronises the device before comparing cannot see by reading the output.
The judge launches an empty marker kernel on the caller's stream as forward returns; stream order starts
it only once everything the caller's stream waits for is done, so any of the call's GPU work that ends
after the marker starts was not waited for. The check reads the call's kernel records (CUPTI), so it is
deterministic: no lucky read is needed. Timing is unchanged: work on every stream counts there.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import torch

from cudasmith.timing import clock
from cudasmith.timing.activity import Activity

MARKER_SOURCE = 'extern "C" __global__ void {name}() {{}}'
# The verdict's words for the race (its rule is Rule.SIDE_STREAM, named where the race is refused).
UNSYNCHRONISED = "unsynchronised side stream"


class ReturnMarker:
    """An empty kernel of a name drawn per worker, launched on the caller's stream as forward returns."""

    def __init__(self) -> None:
        """Compiled (NVRTC) and launched once while the worker is prepared, before any solution. Its name is
        drawn per worker, so a solution cannot launch a decoy of it; it is kept out of the runtime's
        registry and disk cache (no file per worker, and no claim to it as a kernel of the solution's)."""
        from cudasmith.runtime.arch import device_arch
        from cudasmith.runtime.cuda import CudaKernel, _nvrtc_compile

        self.name = f"cudasmith_returned_{clock.fresh_seed():x}"
        arch = device_arch()
        source = MARKER_SOURCE.format(name=self.name)
        cubin, lowered, log = _nvrtc_compile(source, self.name, [f"--gpu-architecture={arch}"])
        self.kernel = CudaKernel(lowered, arch, cubin, name=self.name, params=[], log=log)
        self.mark(None)
        clock.cuda_synchronize()
        # What a launch as forward returns needs, bound now: from the return to the worker's check, the judge
        # calls nothing it would look up (a name the solution replaced and puts back when called).
        from cuda.bindings import driver

        self._launch = driver.cuLaunchKernel
        self._stream_type = driver.CUstream
        self._function = self.kernel._function(torch.cuda.current_device())
        self._no_arguments = (ctypes.c_void_p * 1)()
        self._arguments = ctypes.addressof(self._no_arguments)
        # The canary: the caller's stream waits on an event recorded on a stream of the judge's own, so that a
        # call's records show whether the profiler records waits and the records they wait for (streams.py
        # reads them only then). The caller's stream is the waiter because Kineto keeps a stream's waits
        # only where GPU work ran on that stream in the window; the judge's stream has none, so its event is
        # already complete and the wait costs the caller nothing.
        _, self._event = driver.cuEventCreate(driver.CUevent_flags.CU_EVENT_DISABLE_TIMING)
        _, self._side = driver.cuStreamCreate(driver.CUstream_flags.CU_STREAM_NON_BLOCKING)
        self._record, self._wait = driver.cuEventRecord, driver.cuStreamWaitEvent

    def mark(self, stream: Any) -> None:
        """Launch the marker on `stream` (the caller's, taken before forward ran)."""
        self.kernel(grid=1, block=1, stream=stream)

    def bound(self, stream: Any) -> Callable[[], Any]:
        """The marker's launch on `stream`, everything it calls bound now (before forward runs); calling it
        returns the driver's status."""
        launch, function, arguments = self._launch, self._function, self._arguments
        handle = self._stream_type(stream.cuda_stream)

        def launch_now() -> Any:
            (status,) = launch(function, 1, 1, 1, 1, 1, 1, 0, handle, arguments, 0)
            return status

        return launch_now

    def canary(self, stream: Any) -> None:
        """Record the judge's event on its own stream and have `stream` (the caller's) wait on it."""
        (status,) = self._record(self._event, self._side)
        if int(status) == 0:
            self._wait(self._stream_type(stream.cuda_stream), self._event, 0)

    def split(self, work: list[Activity]) -> tuple[list[Activity], Activity | None]:
        """The call's GPU work without the marker, and the marker's record (None when it was not seen)."""
        markers = [activity for activity in work if activity.name == self.name]
        rest = [activity for activity in work if activity.name != self.name]
        return rest, (max(markers, key=lambda a: a.start_ns) if markers else None)


def unsynchronised(work: list[Activity], marker: Activity | None) -> str | None:
    """Why the output was not ready on the caller's stream when forward returned, or None when it was."""
    if marker is None:
        return None
    late = [activity for activity in work if activity.end_ns > marker.start_ns]
    if not late:
        return None
    last = max(late, key=lambda a: a.end_ns)
    after_us = (last.end_ns - marker.start_ns) / 1e3
    return (
        f"{UNSYNCHRONISED}: {last.kind} {last.name[:160]} was still running {after_us:.1f} µs after forward "
        "returned, on a stream the caller's current stream does not wait for (make the caller's stream wait: "
        "torch.cuda.current_stream().wait_stream(side) or an event)"
    )
