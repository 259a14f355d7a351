"""Classifying what ran inside a call: PyTorch compute among operators, and whose each GPU kernel is."""

from __future__ import annotations

import ctypes
import mmap
import subprocess
from pathlib import Path

from cudasmith.harness.workers.binaries import (
    CandidateBinaries,
    LoaderCount,
    below_dispatcher,
    mapped_binaries,
    shared_objects,
    torch_below_dispatcher,
)
from cudasmith.harness.workers.observe import OwnKernels, audit_kernels, audit_ops, demangle
from cudasmith.harness.workers.origins import Origins, trusted_roots
from cudasmith.harness.workers.recording import CpuEvent
from cudasmith.timing.activity import Activity
from cudasmith.timing.protocol import WorkTotal


def op(name: str, start: int, end: int, kind: str = "cpu_op", thread: int = 1) -> CpuEvent:
    return CpuEvent(name, start, end, thread, kind)


def test_compute_is_counted_where_the_candidate_called_it_not_inside() -> None:
    events = [
        op("aten::softmax", 0, 10), op("aten::_softmax", 1, 9),          # one call, counted once
        op("aten::contiguous", 20, 30), op("aten::clone", 21, 29), op("aten::copy_", 22, 28),
        op("aten::empty_like", 40, 41), op("profiler::_record_function_enter_new", 50, 51),
        op("mylib::fused", 60, 70), op("aten::mm", 61, 69),               # inside a custom op: still PyTorch's
    ]  # fmt: skip
    audit = audit_ops(events)
    assert audit.compute == {"aten::softmax": 1, "aten::mm": 1}
    assert audit.compiled_regions == 0


def test_only_the_marked_calls_count_and_compiled_regions_are_found() -> None:
    marker = "cudasmith-call-1"
    events = [
        op(marker, 0, 100, "user_annotation"), op("aten::add", 10, 20),
        op("aten::randint", 200, 210),                                    # the judge's, between calls
        op(marker, 300, 400, "user_annotation"), op("Torch-Compiled Region: 0/0", 310, 390, "user_annotation"),
        op("aten::sum", 320, 330),                                        # inside the compiled region
    ]  # fmt: skip
    audit = audit_ops(events, marker=marker)
    assert audit.compute == {"aten::add": 1}
    assert audit.compiled_regions == 1


def test_the_cpu_own_share_is_the_marked_calls_time_outside_compute_less_the_floor() -> None:
    marker, floor = "cudasmith-call-1", "cudasmith-call-1-floor"
    events = [
        op(floor, 0, 10, "user_annotation"), op(floor, 20, 30, "user_annotation"), op(floor, 40, 70, "user_annotation"),
        op("aten::mul", 80, 90),                                          # a warm-up call: unmarked, not counted
        op(marker, 100, 200, "user_annotation"), op("aten::mul", 110, 190), op("aten::mul", 120, 180),
        op(marker, 300, 400, "user_annotation"), op("aten::empty", 305, 310), op("aten::add", 310, 390),
    ]  # fmt: skip
    audit = audit_ops(events, marker, floor)
    assert audit.floor == [10, 10, 30] and audit.calls == [[100, 80], [100, 80]]
    # Each call: 100 ns, 80 in compute, 10 the floor (the median floor call): 10 of the solution's own.
    assert audit.own_share() == 20 / (20 + 160)
    assert audit_ops(events, marker).own_share() == 40 / (40 + 160)  # without the floor
    assert audit_ops(events).own_share() is None  # no marked calls: not known


def _own(names: set[str]) -> OwnKernels:
    own = OwnKernels(Origins(*trusted_roots()))
    own._claim(names)
    return own


def test_kernels_are_the_candidates_only_when_its_compilers_built_them() -> None:
    own = _own({"relu_kernel"})
    work = [
        Activity("relu_kernel", 0, 100), Activity("Memcpy DtoD (Device -> Device)", 100, 110, "gpu_memcpy"),
        Activity("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)", 110, 120),
        Activity("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(float*)", 120, 220),
    ]  # fmt: skip
    audit = audit_kernels(work, own)
    assert audit.own_ns == 100 and audit.allowed_ns == 20
    assert list(audit.library) == [
        "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(float*)"
    ]
    assert audit.own_share() == 100 / 220


def test_library_names_cannot_be_claimed_as_the_candidates_own() -> None:
    decoys = {"triton_per_fused__softmax_0", "_ZN2at6native4fillEv", "sm90_xmma_gemm_f32f32", "cublasGemv"}
    own = _own(decoys | {"softmax_rows"})
    assert own.names >= {"softmax_rows"} and not own.names & decoys
    assert demangle("_ZN2at6native4fillEv") == "at::native::fill()"


def test_measured_totals_classify_like_activities(tmp_path: Path) -> None:
    own = _own({"add"})
    audit = audit_kernels({"add": WorkTotal("kernel", 50, 5),
                           "ampere_sgemm_128x64_nn": WorkTotal("kernel", 150, 5)}, own)  # fmt: skip
    assert audit.own_share() == 0.25 and "ampere_sgemm_128x64_nn" in audit.library


def test_pytorch_below_the_dispatcher_is_named_unless_the_binary_defines_it(tmp_path: Path) -> None:
    """Imported or dlsym'd ATen entry points below the dispatcher count; ATen's header templates compiled
    into the library (defined there) and device facts do not."""
    assert below_dispatcher("_ZN2at3cpu6mm_outERNS_6TensorERKS1_S4_")
    assert below_dispatcher("_ZN2at4_ops4relu10redispatchEN3c1014DispatchKeySetERKNS_6TensorE")
    assert below_dispatcher("_ZN3c1020enableRecordFunctionEb")
    assert not below_dispatcher("_ZN2at4_ops4relu4callERKNS_6TensorE")  # through the dispatcher: recorded
    assert not below_dispatcher("_ZN2at4cuda26getCurrentDevicePropertiesEv")
    source = tmp_path / "lib.c"
    source.write_text(
        "void* dlsym(void*, const char*);\n"
        'void* find(void) { return dlsym(0, "_ZN2at3cpu6mm_outERNS_6TensorERKS1_S4_"); }\n'
        "void _ZN2at6native8own_helpEv(void) {}\n"
    )
    library = tmp_path / "lib.so"
    subprocess.run(["gcc", "-shared", "-fPIC", str(source), "-o", str(library)], check=True)
    assert torch_below_dispatcher(library.read_bytes()) == ["_ZN2at3cpu6mm_outERNS_6TensorERKS1_S4_"]


def test_the_shared_objects_mapped_are_read_from_the_maps_text() -> None:
    maps = (
        "7f00-7f10 r-xp 00000000 08:01 123   /usr/lib/libc.so.6\n"
        "7f10-7f20 r--p 00010000 08:01 123   /usr/lib/libc.so.6\n"
        "7f20-7f30 rw-p 00000000 00:00 0 \n"
        "7f30-7f40 r-xp 00000000 08:01 456   /tmp/a folder/ext.so (deleted)\n"
        "7f40-7f50 r-xp 00000000 00:01 789   /memfd:kernel.so (deleted)\n"
        "7f50-7f60 r-xp 00000000 08:01 999   /usr/bin/python3.12\n"
        "7f60-7f70 rw-p 00000000 00:00 0   [heap]\n"
    )
    assert shared_objects(maps) == {
        "/usr/lib/libc.so.6": "7f00-7f10",
        "/tmp/a folder/ext.so (deleted)": "7f30-7f40",
        "/memfd:kernel.so (deleted)": "7f40-7f50",
    }
    # This process's own: libraries torch loaded are among them, each with an address range.
    mapped = mapped_binaries()
    assert any("torch" in path for path in mapped) and all("-" in span for span in mapped.values())


def _below_dispatcher_library(folder: Path, name: str) -> Path:
    source = folder / f"{name}.c"
    source.write_text(
        "void* dlsym(void*, const char*);\n"
        'void* find(void) { return dlsym(0, "_ZN2at3cpu6mm_outERNS_6TensorERKS1_S4_"); }\n'
    )
    library = folder / f"{name}.so"
    subprocess.run(["gcc", "-shared", "-fPIC", str(source), "-o", str(library)], check=True)
    return library


def test_a_library_loaded_after_the_check_began_is_read_at_the_next_call(tmp_path: Path) -> None:
    """Between full checks the maps are read when the dynamic loader's counts moved: a library loaded
    (dlopen, an extension's import) is read at the check after the call that loaded it."""
    library = _below_dispatcher_library(tmp_path, "late")
    binaries = CandidateBinaries(Origins(*trusted_roots()))
    counts = LoaderCount().now()
    assert counts is not None, "glibc keeps the loader's counts"
    assert binaries.refused(full=False) is None
    ctypes.CDLL(str(library))
    assert LoaderCount().now() != counts
    found = binaries.refused(full=False)
    assert found is not None and found.startswith("late.so calls PyTorch's C++ below the dispatcher"), found


def test_a_library_mapped_without_the_loader_is_read_at_the_full_check(tmp_path: Path) -> None:
    """A file mapped with mmap moves no count of the loader: the full checks (after forward, after the
    timed calls, at the end) read the maps whatever the counts say."""
    library = _below_dispatcher_library(tmp_path, "mapped")
    binaries = CandidateBinaries(Origins(*trusted_roots()))
    with open(library, "rb") as file, mmap.mmap(file.fileno(), 0, prot=mmap.PROT_READ) as mapped:
        assert mapped[:4] == b"\x7fELF"
        assert binaries.refused(full=False) is None
        found = binaries.refused(full=True)
    assert found is not None and found.startswith("mapped.so calls PyTorch's C++ below the dispatcher"), found
