"""The judge's own references to clocks, synchronisation, launches and the profiler.

The worker imports this module (through the timing module) before it imports any solution, so these are
the functions as they were before candidate code ran. A candidate that replaces `time.perf_counter`,
`torch.cuda.synchronize`, `torch.cuda.Event.elapsed_time` or `CudaKernel.__call__` at import changes
what its own code sees, not what the harness measures; `replaced()` names what it replaced.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import torch

from cudasmith.runtime import cuda as runtime_cuda

perf_counter = time.perf_counter
sleep = time.sleep
# Fresh entropy from the OS: what the judge draws with it (perturbations, which calls are re-checked)
# exists nowhere in the process before it is drawn, so no state a candidate can read predicts it.
urandom = os.urandom


def fresh_seed() -> int:
    """A 63-bit seed drawn from the OS's entropy now."""
    return int.from_bytes(urandom(8), "little") >> 1


def fresh_below(n: int) -> int:
    """A number in [0, n) drawn from the OS's entropy now (bias under 2**-40 for n below 2**24)."""
    return int.from_bytes(urandom(8), "little") % n


Event = torch.cuda.Event
# The functions, not the attribute look-ups: `torch.cuda.Event.record = …` later changes neither.
event_record = torch.cuda.Event.record
event_elapsed_ms = torch.cuda.Event.elapsed_time
# cudaDeviceSynchronize: waits for the work of every stream of the device, not just the current one.
# None in a torch built without CUDA, where only the GPU paths call it, and those are never taken.
cuda_synchronize: Callable[[], None] = getattr(torch._C, "_cuda_synchronize", None)  # type: ignore[assignment]
current_stream = torch.cuda.current_stream
CUDAGraph = torch.cuda.CUDAGraph
graph_capture = torch.cuda.graph
Stream = torch.cuda.Stream
use_stream = torch.cuda.stream

Profile = torch.autograd.profiler.profile
CUDA_DEVICE_TYPE = torch.autograd.DeviceType.CUDA
# Whether a profiler is recording in this process: a candidate that turned it off is found out with this.
profiler_enabled = torch._C._autograd._profiler_enabled
# A cheap named range in the profiler's records.
RecordFunctionFast = torch._C._profiler._RecordFunctionFast

compile_cuda = runtime_cuda.compile_cuda
launch_kernel = runtime_cuda.CudaKernel.__call__

# Where each captured function is looked up by everyone else: (owner, attribute, what was there).
_WATCHED: dict[str, tuple[Any, str, Any]] = {
    "time.perf_counter": (time, "perf_counter", perf_counter),
    "time.sleep": (time, "sleep", sleep),
    "torch.cuda.synchronize": (torch.cuda, "synchronize", torch.cuda.synchronize),
    "torch.cuda.Event": (torch.cuda, "Event", Event),
    "torch.cuda.Event.record": (torch.cuda.Event, "record", event_record),
    "torch.cuda.Event.elapsed_time": (torch.cuda.Event, "elapsed_time", event_elapsed_ms),
    "torch.cuda.current_stream": (torch.cuda, "current_stream", current_stream),
    "torch.cuda.CUDAGraph": (torch.cuda, "CUDAGraph", CUDAGraph),
    "torch.autograd.profiler.profile": (torch.autograd.profiler, "profile", Profile),
    "cudasmith.runtime.cuda.compile_cuda": (runtime_cuda, "compile_cuda", compile_cuda),
    "cudasmith.runtime.cuda.CudaKernel.__call__": (runtime_cuda.CudaKernel, "__call__", launch_kernel),
}


def replaced() -> list[str]:
    """The timing functions that something replaced since this module was imported (their names)."""
    return [
        name
        for name, (owner, attribute, original) in _WATCHED.items()
        if getattr(owner, attribute, None) is not original
    ]
