"""Moving a candidate's outputs to the judge without a pipe: CUDA IPC on the GPU, shared memory on the CPU.

The candidate's worker exports each output (a handle and an offset into its device allocation, or an offset
into its arena, one file in /dev/shm kept for the worker's life) and keeps it alive until its next request;
the judge's worker copies it at once into memory of its own, and lets go. Only headers cross the pipes, so
an output of gigabytes costs a device-to-device copy instead of two trips through the host. Nothing is
unpickled: a reference is plain JSON, checked against the size it claims.

A reference comes from untrusted code, so the importing side checks everything: the handle must open,
the range must lie inside the allocation or the file it opened, a shared-memory file must carry this
worker's token in its name and must be a plain file, not a link. That two references do not share memory
is the parent's check, which sees a whole reply (witnesses/rechecks.py)."""

from __future__ import annotations

import contextlib
import math
import mmap
import os
import stat
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


# Where an output starts in the arena (a multiple of every dtype's size), and the least an arena grows by.
ALIGNMENT = 64
SEGMENT_BYTES = 1 << 20


class _Arena:
    """One file of shared memory, kept for the worker's life, that its CPU outputs are carved from: a request
    reuses the pages the last one touched instead of making, filling and unlinking a file per output (64 timed
    calls' outputs of 16 MiB cost 0.43 s to make and 0.32 s to let go as files on a 2-core EPYC, 0.05 s to
    fill again). It grows by mappings of its own (at least doubling), so a tensor carved earlier stays where it
    is; an output never straddles two mappings. The judge reads a range of it (an output's offset and size),
    checked against the file's size, while this worker is stopped; nothing here is trusted by the reader."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.size = 0  # the file's size: the mappings' ranges end to end
        self.mappings: list[tuple[int, mmap.mmap]] = []  # (start in the file, mapping)
        self.top = 0  # where the next output may start

    def carve(self, nbytes: int) -> tuple[int, torch.Tensor]:
        """`nbytes` of the arena (its offset and a tensor of bytes over it), after whatever was carved since the
        last rewind."""
        for start, mapping in self.mappings:
            end = start + len(mapping)
            offset = max(self.top, start)
            offset += -offset % ALIGNMENT
            if offset + nbytes <= end:
                self.top = offset + nbytes
                view = torch.frombuffer(mapping, dtype=torch.uint8, count=nbytes, offset=offset - start)
                return offset, view
        self._grow(nbytes)
        return self.carve(nbytes)

    def _grow(self, nbytes: int) -> None:
        length = max(nbytes, self.size, SEGMENT_BYTES)
        length += -length % mmap.ALLOCATIONGRANULARITY
        flags = os.O_RDWR | os.O_NOFOLLOW | (0 if self.size else os.O_CREAT | os.O_EXCL)
        descriptor = os.open(self.path, flags, 0o600)
        try:
            os.ftruncate(descriptor, self.size + length)
            mapping = mmap.mmap(descriptor, length, offset=self.size)
        finally:
            os.close(descriptor)
        self.mappings.append((self.size, mapping))  # carve() starts past `top` in it anyway
        self.size += length

    def rewind(self) -> None:
        """Every output carved so far is let go of: the next request carves from the start again."""
        self.top = 0


class Exporter:
    """The worker's side: references to its outputs, kept alive until the next `release()`."""

    def __init__(self, token: str) -> None:
        self.token = token
        self._arena: _Arena | None = None  # its file of shared memory, made on first use
        self._alive: list[torch.Tensor] = []
        # Tensors made in shared memory (shared()), by id, with their offset into the arena.
        self._shared: dict[int, tuple[torch.Tensor, int]] = {}

    def shared(self, like: torch.Tensor) -> torch.Tensor:
        """An empty tensor of `like`'s dtype and shape (a CPU tensor) in this worker's shared memory, which
        export() refers to without a copy: the judge's worker reads it there, while this worker is stopped
        (harness/witnesses/rechecks.py). Kept until the next release()."""
        nbytes = like.numel() * like.element_size()
        if nbytes == 0:
            return torch.empty(like.shape, dtype=like.dtype)
        offset, raw = self._carve(nbytes)
        tensor = raw.view(like.dtype).reshape(like.shape)
        self._shared[id(tensor)] = (tensor, offset)
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
                references.append(self._shared_reference(dtype, shape, nbytes, self._shared[id(tensor)][1]))
                continue
            tensor = tensor.detach().contiguous()
            self._alive.append(tensor)
            if nbytes == 0:
                references.append(OutputRef(dtype, shape, "empty"))
            elif tensor.is_cuda:
                references.append(self._export_cuda(tensor, dtype, shape, nbytes))
            else:
                offset, raw = self._carve(nbytes)
                raw.copy_(tensor.reshape(-1).view(torch.uint8))
                references.append(self._shared_reference(dtype, shape, nbytes, offset))
        return references

    def _carve(self, nbytes: int) -> tuple[int, torch.Tensor]:
        if self._arena is None:
            folder = own_shared_memory(self.token)
            self._arena = _Arena(folder / f"{SHM_PREFIX}{self.token}-arena")
        return self._arena.carve(nbytes)

    def _shared_reference(self, dtype: str, shape: list[int], nbytes: int, offset: int) -> OutputRef:
        assert self._arena is not None
        return OutputRef(dtype, shape, "shm", nbytes, offset=offset, name=self._arena.path.name)

    def _export_cuda(self, tensor: torch.Tensor, dtype: str, shape: list[int], nbytes: int) -> OutputRef:
        driver = _driver()
        pointer = tensor.data_ptr()
        base, size = _check(driver.cuMemGetAddressRange(pointer), "cuMemGetAddressRange")
        handle = _check(driver.cuIpcGetMemHandle(base), "cuIpcGetMemHandle")
        handle_hex, offset = bytes(handle.reserved).hex(), pointer - int(base)
        return OutputRef(dtype, shape, "cuda_ipc", nbytes, handle_hex, offset, int(size))

    def release(self, keep: set[int] | None = None) -> None:
        """Let go of the last export (the judge has copied it by now), and of the tensors shared() made but
        those in `keep` (by id). The arena is carved from its start again once nothing in it is kept."""
        self._alive.clear()
        self._shared = {key: entry for key, entry in self._shared.items() if keep and key in keep}
        if not self._shared and self._arena is not None:
            self._arena.rewind()


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
    if reference.nbytes != nbytes:
        raise TransferError("a shared-memory output's size does not match its shape and dtype")
    path = shared_memory_folder(token) / name
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise TransferError(f"a shared-memory output cannot be opened ({exc.strerror})") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise TransferError("a shared-memory output is not a plain file")
        if reference.offset + nbytes > status.st_size:
            raise TransferError("a shared-memory reference points past the end of its file")
        copy = bytearray(nbytes)
        done = 0
        with memoryview(copy) as into:
            while done < nbytes:  # one copy, straight from the file: nothing of it is mapped here
                read = os.preadv(descriptor, [into[done:]], reference.offset + done)
                if read <= 0:
                    raise TransferError("a shared-memory output was cut short while read")
                done += read
    finally:
        os.close(descriptor)
    return torch.frombuffer(copy, dtype=torch.uint8) if nbytes else torch.empty(0, dtype=torch.uint8)


def sweep_shared(token: str) -> None:
    """Remove whatever shared-memory outputs a finished worker left behind, and its folder."""
    folder = shared_memory_folder(token)
    for path in folder.glob(f"{SHM_PREFIX}{token}-*"):
        with contextlib.suppress(OSError):
            path.unlink()
    with contextlib.suppress(OSError):
        folder.rmdir()
