"""Moving a candidate's outputs to the judge without a pipe: CUDA IPC on the GPU, shared memory on the CPU.

The candidate's worker exports each output (a handle and an offset into its device allocation, or a
file in /dev/shm) and keeps it alive until its next request; the judge's worker opens it, copies it at
once into memory of its own, and lets go. Only headers cross the pipes, so an output of gigabytes costs
a device-to-device copy instead of two trips through the host. Nothing is unpickled: a reference is
plain JSON, checked against the size it claims.

A reference comes from untrusted code, so the importing side checks everything: the handle must open,
the range must lie inside the allocation it opened, a shared-memory file must carry this worker's token
in its name, must not be a link, and must be exactly as large as the header says.
"""

from __future__ import annotations

import contextlib
import math
import mmap
import os
from pathlib import Path
from typing import Any

import torch

from cudasmith.harness.wire.outputs import OutputRef
from cudasmith.harness.wire.protocol import dtype_name, wire_dtypes
from cudasmith.harness.wire.shared_memory import SHM_DIR, SHM_PREFIX, own_shared_memory, shared_memory_folder

IPC_HANDLE_BYTES = 64


class TransferError(Exception):
    """An output reference that does not open as announced (a broken or forged reference)."""


def _driver() -> Any:
    from cuda.bindings import driver

    return driver


def _check(result: tuple[Any, ...], what: str) -> Any:
    error = result[0]
    if int(error) != 0:
        raise TransferError(f"{what} failed ({error})")
    return result[1] if len(result) == 2 else result[1:]


class Exporter:
    """The worker's side: references to its outputs, kept alive until the next `release()`."""

    def __init__(self, token: str) -> None:
        self.token = token
        self._count = 0
        self._folder: Path | None = None  # its folder of shared memory, found on first use
        self._alive: list[torch.Tensor] = []
        self._files: list[Path] = []
        # Tensors made in shared memory (shared()), by id, with the name of their file and its mapping.
        self._shared: dict[int, tuple[torch.Tensor, str, mmap.mmap]] = {}

    def shared(self, like: torch.Tensor) -> torch.Tensor:
        """An empty tensor of `like`'s dtype and shape (a CPU tensor) in a file of shared memory of its own,
        which export() refers to without a copy: the judge's worker reads it there, while this worker is
        stopped (harness/witnesses/rechecks.py). Kept until the next release()."""
        nbytes = like.numel() * like.element_size()
        if nbytes == 0:
            return torch.empty(like.shape, dtype=like.dtype)
        path = self._new_file()
        descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        try:
            os.ftruncate(descriptor, nbytes)
            mapped = mmap.mmap(descriptor, nbytes)
        finally:
            os.close(descriptor)
        self._files.append(path)
        tensor = (
            torch.frombuffer(mapped, dtype=torch.uint8, count=nbytes).view(like.dtype).reshape(like.shape)
        )
        self._shared[id(tensor)] = (tensor, path.name, mapped)
        return tensor

    def export(self, tensors: list[torch.Tensor], release: bool = True) -> list[OutputRef]:
        """One reference per tensor (made contiguous first); `release`: let go of the last export first
        (tensors made by shared() since then are let go of too, unless exported here)."""
        if release:
            keep = {id(tensor) for tensor in tensors}
            self.release(keep)
        references = []
        for tensor in tensors:
            dtype, shape = dtype_name(tensor.dtype), list(tensor.shape)
            nbytes = tensor.numel() * tensor.element_size()
            if id(tensor) in self._shared and nbytes:
                references.append(OutputRef(dtype, shape, "shm", nbytes, name=self._shared[id(tensor)][1]))
                continue
            tensor = tensor.detach().contiguous()
            self._alive.append(tensor)
            if nbytes == 0:
                references.append(OutputRef(dtype, shape, "empty"))
            elif tensor.is_cuda:
                references.append(self._export_cuda(tensor, dtype, shape, nbytes))
            else:
                references.append(self._export_shared(tensor, dtype, shape, nbytes))
        return references

    def _new_file(self) -> Path:
        if self._folder is None:
            self._folder = own_shared_memory(self.token)
        self._count += 1
        return self._folder / f"{SHM_PREFIX}{self.token}-{self._count}"

    def _export_cuda(self, tensor: torch.Tensor, dtype: str, shape: list[int], nbytes: int) -> OutputRef:
        driver = _driver()
        pointer = tensor.data_ptr()
        base, size = _check(driver.cuMemGetAddressRange(pointer), "cuMemGetAddressRange")
        handle = _check(driver.cuIpcGetMemHandle(base), "cuIpcGetMemHandle")
        handle_hex, offset = bytes(handle.reserved).hex(), pointer - int(base)
        return OutputRef(dtype, shape, "cuda_ipc", nbytes, handle_hex, offset, int(size))

    def _export_shared(self, tensor: torch.Tensor, dtype: str, shape: list[int], nbytes: int) -> OutputRef:
        path = self._new_file()
        descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        try:
            os.ftruncate(descriptor, nbytes)
            with mmap.mmap(descriptor, nbytes) as mapped:
                view = torch.frombuffer(mapped, dtype=torch.uint8)
                view.copy_(tensor.reshape(-1).view(torch.uint8))
                del view
        finally:
            os.close(descriptor)
        self._files.append(path)
        return OutputRef(dtype, shape, "shm", nbytes, name=path.name)

    def release(self, keep: set[int] | None = None) -> None:
        """Let go of the last export (the judge has copied it by now), and of the tensors shared() made but
        those in `keep` (by id)."""
        self._alive.clear()
        kept = {key: entry for key, entry in self._shared.items() if keep and key in keep}
        names = {name for _, name, _ in kept.values()}
        for path in self._files:
            if path.name not in names:
                with contextlib.suppress(OSError):
                    path.unlink()
        self._files = [path for path in self._files if path.name in names]
        self._shared = kept


def shared_memory_available() -> bool:
    """Whether outputs on the CPU can travel through /dev/shm here."""
    return SHM_DIR.is_dir() and os.access(SHM_DIR, os.W_OK)


def _expected_bytes(reference: OutputRef) -> tuple[torch.dtype, list[int], int]:
    dtype = wire_dtypes().get(reference.dtype)
    shape = reference.shape
    if dtype is None:
        raise TransferError(f"output dtype {reference.dtype!r} is not allowed")
    if not all(d >= 0 for d in shape):
        raise TransferError(f"bad output shape {shape!r}")
    return dtype, shape, math.prod(shape) * torch.empty((), dtype=dtype).element_size()


class _CudaAllocation:
    """A range of another process's device memory as a tensor, for copying out of."""

    def __init__(self, pointer: int, nbytes: int) -> None:
        self.__cuda_array_interface__ = {
            "shape": (nbytes,), "typestr": "|u1", "data": (pointer, False), "version": 2,
        }  # fmt: skip


def import_outputs(references: list[OutputRef], token: str, device: str) -> list[torch.Tensor]:
    """Copies of the outputs a worker exported, on `device`; TransferError for a bad reference."""
    copies: list[torch.Tensor] = []
    opened: dict[str, int] = {}
    try:
        for reference in references:
            dtype, shape, nbytes = _expected_bytes(reference)
            kind = reference.kind
            if kind == "empty" and nbytes == 0:
                copies.append(torch.empty(shape, dtype=dtype, device=device))
            elif kind == "cuda_ipc" and device.startswith("cuda"):
                raw = _import_cuda(reference, nbytes, opened)
                copies.append(raw.view(dtype).reshape(shape))
            elif kind == "shm":
                raw = _import_shared(reference, nbytes, token)
                copies.append(raw.view(dtype).reshape(shape).to(device))
            else:
                raise TransferError(f"an output reference of kind {kind!r} cannot be opened here")
        if opened:
            torch.cuda.synchronize()  # the copies are done before the other process's memory is let go
    finally:
        driver = _driver() if opened else None
        for pointer in opened.values():
            with contextlib.suppress(Exception):
                driver.cuIpcCloseMemHandle(pointer)  # type: ignore[union-attr]
    return copies


def _import_cuda(reference: OutputRef, nbytes: int, opened: dict[str, int]) -> torch.Tensor:
    driver = _driver()
    handle_hex, offset = reference.handle, reference.offset
    if not handle_hex or offset < 0:
        raise TransferError("a CUDA IPC reference lacks its handle or offset")
    if reference.nbytes != nbytes:
        raise TransferError("a CUDA IPC reference's size does not match its shape and dtype")
    try:
        handle_bytes = bytes.fromhex(handle_hex)
    except ValueError:
        raise TransferError("a CUDA IPC handle is not hex") from None
    if len(handle_bytes) != IPC_HANDLE_BYTES:
        raise TransferError("a CUDA IPC handle has the wrong size")
    if handle_hex not in opened:
        handle = driver.CUipcMemHandle()
        handle.reserved = handle_bytes
        flags = driver.CUipcMem_flags.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
        opened[handle_hex] = int(
            _check(driver.cuIpcOpenMemHandle(handle, flags), "opening a CUDA IPC handle")
        )
    base = opened[handle_hex]
    _, size = _check(driver.cuMemGetAddressRange(base), "cuMemGetAddressRange")
    if offset + nbytes > int(size):
        raise TransferError("a CUDA IPC reference points past the end of its allocation")
    source = torch.as_tensor(_CudaAllocation(base + offset, nbytes), device="cuda")
    return source.clone()


def _import_shared(reference: OutputRef, nbytes: int, token: str) -> torch.Tensor:
    name = reference.name
    if not name.startswith(f"{SHM_PREFIX}{token}-") or "/" in name:
        raise TransferError("a shared-memory reference names a file that is not this worker's")
    path = shared_memory_folder(token) / name
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise TransferError(f"a shared-memory output cannot be opened ({exc.strerror})") from None
    try:
        if os.fstat(descriptor).st_size != nbytes:
            raise TransferError("a shared-memory output's size does not match its shape and dtype")
        with mmap.mmap(descriptor, nbytes, prot=mmap.PROT_READ) as mapped:
            copy = torch.frombuffer(bytearray(mapped), dtype=torch.uint8)
    finally:
        os.close(descriptor)
        with contextlib.suppress(OSError):
            path.unlink()
    return copy


def sweep_shared(token: str) -> None:
    """Remove whatever shared-memory outputs a finished worker left behind, and its folder."""
    folder = shared_memory_folder(token)
    for path in folder.glob(f"{SHM_PREFIX}{token}-*"):
        with contextlib.suppress(OSError):
            path.unlink()
    with contextlib.suppress(OSError):
        folder.rmdir()
