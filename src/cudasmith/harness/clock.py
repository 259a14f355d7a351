"""The judge's own references to clocks, synchronisation, launches and the profiler.

The worker imports this module (through the timing module) before it imports any solution, so these are
the functions as they were before candidate code ran. A candidate that replaces `time.perf_counter`,
`torch.cuda.synchronize`, `torch.cuda.Event.elapsed_time` or `CudaKernel.__call__` at import changes
what its own code sees, not what the harness measures. (Detecting such patches is check.py's job.)
"""

from __future__ import annotations

import time

import torch

from cudasmith.runtime.cuda import CudaKernel

perf_counter = time.perf_counter
sleep = time.sleep

Event = torch.cuda.Event
# The functions, not the attribute look-ups: `torch.cuda.Event.record = …` later changes neither.
event_record = torch.cuda.Event.record
event_elapsed_ms = torch.cuda.Event.elapsed_time
# cudaDeviceSynchronize: waits for the work of every stream of the device, not just the current one.
cuda_synchronize = getattr(torch._C, "_cuda_synchronize", None)
current_stream = torch.cuda.current_stream
CUDAGraph = torch.cuda.CUDAGraph
graph_capture = torch.cuda.graph
Stream = torch.cuda.Stream
use_stream = torch.cuda.stream

Profile = torch.autograd.profiler.profile
CUDA_DEVICE_TYPE = torch.autograd.DeviceType.CUDA

launch_kernel = CudaKernel.__call__
