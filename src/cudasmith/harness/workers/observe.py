"""What ran inside a candidate's calls, seen below every Python-level escape.

- PyTorch operators: PyTorch's dispatcher runs a RecordFunction for every operator, however it was
  spelled in Python or reached from C++ (`at::softmax` in an extension), and whatever the candidate did
  to the Python dispatcher (modes popped, Python dispatch turned off): the profiler's CPU activity
  collects them. Switching RecordFunction or the profiler off is tripwired (audit.py).
- GPU work: CUPTI records every kernel, copy and memset with its name, whoever launched it, CUDA-graph
  replays included. A kernel is the candidate's own when a compiler it used built it here: NVRTC through
  cudasmith.runtime, Triton JIT functions defined in its code, extensions it built with load_inline or
  load. PyTorch's copies and fills are what a kernel needs from PyTorch. Anything else is a library's
  compute: ATen, cuBLAS, cuDNN, cuFFT, kernels Inductor generated, graphs replaying any of them.

Names that only libraries use (at::, (anonymous namespace), cublas, triton_poi_…) cannot be claimed as
the candidate's own, so a decoy kernel of the same name does not launder a library's.
"""

from __future__ import annotations

import bisect
import ctypes
import gc
import re
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import FunctionType, ModuleType
from typing import Any

from cudasmith.harness.workers.binaries import (
    SYSTEM_LIBRARY_DIRS,
    mapped_binaries,
    names_in_binary,
    read_binary,
)
from cudasmith.harness.workers.origins import Origins
from cudasmith.harness.workers.recording import CpuEvent
from cudasmith.harness.workers.runtimes import runtime_kernels
from cudasmith.timing.activity import Activity
from cudasmith.timing.protocol import WorkTotal

# fmt: off
ALLOCATION = {
    "aten::empty", "aten::empty_strided", "aten::empty_like", "aten::new_empty", "aten::new_empty_strided",
    "aten::zeros", "aten::zeros_like", "aten::new_zeros", "aten::ones", "aten::ones_like", "aten::new_ones",
    "aten::full", "aten::full_like", "aten::new_full", "aten::scalar_tensor", "aten::arange", "aten::fill_",
    "aten::zero_", "aten::resize_", "aten::lift_fresh", "aten::lift_fresh_copy",
}
VIEWS = {
    "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::_reshape_alias", "aten::as_strided",
    "aten::alias", "aten::expand", "aten::expand_as", "aten::view_as", "aten::reshape_as", "aten::permute",
    "aten::transpose", "aten::transpose_", "aten::t", "aten::t_", "aten::unsqueeze", "aten::unsqueeze_",
    "aten::squeeze", "aten::squeeze_", "aten::select", "aten::slice", "aten::narrow", "aten::unbind",
    "aten::split", "aten::split_with_sizes", "aten::chunk", "aten::flatten", "aten::unflatten",
    "aten::diagonal", "aten::detach", "aten::detach_", "aten::view_as_real", "aten::view_as_complex",
    "aten::movedim", "aten::unfold", "aten::as_strided_", "aten::contiguous",
}
COPIES = {
    "aten::copy_", "aten::clone", "aten::_to_copy", "aten::to", "aten::_copy_from", "aten::_copy_from_and_resize",
    "aten::set_", "aten::record_stream", "aten::_local_scalar_dense", "aten::item", "aten::is_nonzero",
    "aten::resolve_conj", "aten::resolve_neg", "aten::conj", "aten::_conj", "aten::_neg_view",
    "aten::pin_memory", "aten::_pin_memory",
}
METADATA = {
    "aten::sym_size", "aten::sym_stride", "aten::sym_numel", "aten::sym_storage_offset", "aten::size",
    "aten::stride", "aten::dim", "aten::is_contiguous", "aten::is_same_size", "aten::is_pinned",
}
# fmt: on
ALLOWED_OPS = frozenset(ALLOCATION | VIEWS | COPIES | METADATA)
# Operator namespaces that are PyTorch's (or its bundled libraries'); a candidate's own custom
# operators are not compute of PyTorch's, though what they call inside may be.
PYTORCH_NAMESPACES = frozenset({"aten", "prims", "quantized", "_quantized", "mkldnn", "onednn", "fbgemm"})
# Profiler annotations of torch.compile at work (compiling, or running what it built): the operators and
# kernels inside are Dynamo's and Inductor's, not the candidate's.
COMPILED_REGION = ("Torch-Compiled Region", "## Call CompiledFxGraph", "TorchDynamo Cache Lookup", "dynamo",
                   "entire_frame_compile")  # fmt: skip
# ATen's kernels for copies (dtype casts included), fills and aranges: allowed, like their operators.
ALLOWED_LIBRARY_KERNEL = re.compile(
    r"direct_copy_kernel|copy_kernel_cuda|FillFunctor|fill_kernel|arange_cuda"
)
# Kernel names only libraries use: a candidate's kernel of such a name is not counted as its own.
RESERVED_KERNEL_NAME = re.compile(
    r"at::|c10::|\(anonymous namespace\)|_GLOBAL__N_|_ZN2at|_ZN3c10|cublas|cudnn|cufft|xmma|cutlass_\d|cutlass3x"
    r"|^triton_(poi|per|red|tem|for|spl|sort|scan|mm|bmm)_"
    r"|^cupy_|^(sm\d+_xmma|ampere_|volta_|turing_|maxwell_|nvjet_)|splitKreduce_kernel|^gemv2?[NT]_kernel",
    re.IGNORECASE,
)


def _load_demangler() -> Any:
    try:
        library = ctypes.CDLL("libstdc++.so.6")
        function = library.__cxa_demangle
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_void_p
    function.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    return function


_demangler = _load_demangler()
_free = ctypes.CDLL(None).free
_free.argtypes = [ctypes.c_void_p]


def demangle(name: str) -> str:
    """A C++ symbol as CUPTI's records show it (the Itanium ABI's demangler, as Kineto uses); others as given."""
    if _demangler is None or not name.startswith("_Z"):
        return name
    status = ctypes.c_int(1)
    pointer = _demangler(name.encode(), None, None, ctypes.byref(status))
    if status.value != 0 or not pointer:
        return name
    try:
        return ctypes.string_at(pointer).decode(errors="replace")
    finally:
        _free(pointer)


@dataclass
class OpAudit:
    """PyTorch compute found in some calls: operators outside the allowed set, and compiled regions."""

    compute: Counter[str] = field(default_factory=Counter)
    compiled_regions: int = 0
    compute_ns: int = 0
    # Per marked call (with a marker): [its duration, its PyTorch compute], in nanoseconds.
    calls: list[list[int]] = field(default_factory=list)
    # Durations of the floor's marked calls: a module that returns its input, called as the solution is.
    floor: list[int] = field(default_factory=list)

    def merge(self, other: OpAudit) -> None:
        self.compute.update(other.compute)
        self.compiled_regions += other.compiled_regions
        self.compute_ns += other.compute_ns
        self.calls.extend(other.calls)
        self.floor.extend(other.floor)

    def own_share(self) -> float | None:
        """On the CPU, the share of the marked calls' time outside PyTorch's compute operators once the floor
        (the median call of a module that returns its input: the module call and the recording) is taken out
        of each; None without marked calls. Allocation, views and Python's cost of calling an operator (several
        microseconds, outside the operator's range) count as the solution's: the share says little of calls
        that take tens of microseconds."""
        floor = sorted(self.floor)[len(self.floor) // 2] if self.floor else 0
        own = sum(max(0, duration - compute - floor) for duration, compute in self.calls)
        compute = sum(compute for _, compute in self.calls)
        return own / (own + compute) if own + compute > 0 else None


def _namespace(name: str) -> str:
    return name.split("::", 1)[0] if "::" in name else ""


def audit_ops(events: list[CpuEvent], marker: str | None = None, floor_marker: str | None = None) -> OpAudit:
    """The compute among the operators: PyTorch operators that are not allocation, views, copies or
    metadata, counted where the candidate called them (what they call in turn is part of them). With
    `marker`, only operators inside ranges of that name count (the calls, not the judge's work between);
    on a thread with no such range (a helper thread of the candidate's), those that start during one. Each
    range's time is kept (OpAudit.calls, with the compute on its own thread); ranges named `floor_marker` are
    the floor's calls."""
    allowed = ALLOWED_OPS
    audit = OpAudit()
    by_thread: dict[int, list[CpuEvent]] = {}
    for event in events:
        by_thread.setdefault(event.thread, []).append(event)
    windows = sorted((e.start_ns, e.end_ns) for e in events if e.name == marker)
    starts = [start for start, _ in windows]

    def during_a_call(event: CpuEvent) -> bool:
        index = bisect.bisect_right(starts, event.start_ns) - 1
        return index >= 0 and event.start_ns < windows[index][1]

    for thread_events in by_thread.values():
        thread_events.sort(key=lambda e: (e.start_ns, -e.end_ns))
        marked_thread = any(event.name == marker for event in thread_events)
        stack: list[tuple[CpuEvent, bool, bool]] = []  # (event, inside a marker, inside an allowed op)
        calls: list[int] = []  # indexes into audit.calls of the marked calls open on this thread
        for event in thread_events:
            while stack and stack[-1][0].end_ns <= event.start_ns:
                if stack.pop()[0].name == marker and calls:
                    calls.pop()
            if marker is None:
                in_marker = True
            elif marked_thread or stack:
                in_marker = any(item[1] for item in stack[-1:])
            else:
                in_marker = during_a_call(event)
            covered = bool(stack) and stack[-1][2]
            if floor_marker is not None and event.name == floor_marker:
                audit.floor.append(event.end_ns - event.start_ns)
                continue
            if event.name == marker:
                audit.calls.append([event.end_ns - event.start_ns, 0])
                calls.append(len(audit.calls) - 1)
                stack.append((event, True, covered))
                continue
            if event.kind == "user_annotation" or event.name.startswith(COMPILED_REGION):
                compiled = event.name.startswith(COMPILED_REGION)
                if in_marker and compiled and not covered:
                    audit.compiled_regions += 1
                stack.append((event, in_marker, covered or compiled))
                continue
            is_allowed = event.name in allowed
            if in_marker and not covered and not is_allowed and _namespace(event.name) in PYTORCH_NAMESPACES:
                audit.compute[event.name] += 1
                audit.compute_ns += event.end_ns - event.start_ns
                if calls:
                    audit.calls[calls[-1]][1] += event.end_ns - event.start_ns
                covered = True  # what it calls is part of it
            stack.append((event, in_marker, covered or is_allowed))
    return audit


@dataclass
class KernelAudit:
    """GPU work by whose it is, in nanoseconds: the candidate's own kernels, PyTorch's copies and fills,
    copies and memsets, and any other library's compute (by kernel name)."""

    own_ns: int = 0
    allowed_ns: int = 0
    library: Counter[str] = field(default_factory=Counter)

    @property
    def library_ns(self) -> int:
        return sum(self.library.values())

    @property
    def total_ns(self) -> int:
        return self.own_ns + self.allowed_ns + self.library_ns

    def own_share(self) -> float | None:
        """The share of the GPU time spent in the candidate's own kernels; None without GPU work."""
        return self.own_ns / self.total_ns if self.total_ns else None

    def merge(self, other: KernelAudit) -> None:
        self.own_ns += other.own_ns
        self.allowed_ns += other.allowed_ns
        self.library.update(other.library)


class OwnKernels:
    """The names of the kernels the candidate's compilers built in this process."""

    def __init__(self, origins: Origins, solution_source: str = "") -> None:
        """Made before the solution is imported: what is mapped by then (the driver, CUPTI, torch's
        libraries) is not the candidate's, and is never read (libcuda alone takes seconds)."""
        self.origins = origins
        self.solution_source = solution_source
        self.names: set[str] = set()
        self.patterns: list[re.Pattern[str]] = []
        self._scanned_binaries: set[str] = set(mapped_binaries())

    def _claim(self, names: Iterable[str]) -> None:
        for name in names:
            readable = demangle(name)
            if not RESERVED_KERNEL_NAME.search(name) and not RESERVED_KERNEL_NAME.search(readable):
                self.names.update((name, readable))

    def refresh(self) -> None:
        """Look again: NVRTC's registry, Triton's JIT functions in candidate code, candidate extensions."""
        from cudasmith.runtime.cuda import compiled_kernel_names

        self._claim(compiled_kernel_names())
        self._claim(self._triton_names())
        names, self.patterns = runtime_kernels(self.origins, self.solution_source)
        self._claim(names)
        for path, mapping in mapped_binaries().items():
            if (
                path not in self._scanned_binaries
                and not path.startswith(SYSTEM_LIBRARY_DIRS)
                and self.origins.of_path(path) == "candidate"
            ):
                self._scanned_binaries.add(path)
                self._claim(names_in_binary(read_binary(path, mapping)))

    def _triton_names(self) -> list[str]:
        """Names of the Triton JIT functions defined in candidate code, read through types' own slots only
        (this runs after a call: nothing of the candidate's may run here)."""
        jit = sys.modules.get("triton.runtime.jit")
        function_type = vars(jit).get("JITFunction") if type(jit) is ModuleType else None
        if not isinstance(function_type, type):
            return []
        found = []
        for obj in gc.get_objects():
            if not issubclass(type(obj), function_type):
                continue
            # Its attributes as the collector sees them (its dict, or the values themselves), no lookup:
            # among them the Python function it compiles.
            for ref in gc.get_referents(obj):
                values = list(dict.values(ref)) if type(ref) is dict else [ref]
                found += [
                    value.__name__
                    for value in values
                    if type(value) is FunctionType and self.origins.of(value.__code__) == "candidate"
                ]
        return found

    def is_own(self, name: str) -> bool:
        if name in self.names:
            return True
        return not RESERVED_KERNEL_NAME.search(name) and any(p.search(name) for p in self.patterns)


def audit_kernels(work: Iterable[Activity] | dict[str, WorkTotal], own: OwnKernels) -> KernelAudit:
    """Classify GPU work (activities, or a measurement's per-name totals) by whose it is."""
    totals: dict[str, tuple[str, int]] = {}
    if isinstance(work, dict):
        totals = {name: (entry.kind, entry.ns) for name, entry in work.items()}
    else:
        for activity in work:
            kind, ns = totals.get(activity.name, (activity.kind, 0))
            totals[activity.name] = (kind, ns + activity.duration_ns)
    audit = KernelAudit()
    refreshed = False
    for name, (kind, ns) in totals.items():
        if kind != "kernel" or ALLOWED_LIBRARY_KERNEL.search(name):
            audit.allowed_ns += ns
            continue
        if not own.is_own(name) and not refreshed:
            own.refresh()
            refreshed = True
        if own.is_own(name):
            audit.own_ns += ns
        else:
            audit.library[name] += ns
    return audit
