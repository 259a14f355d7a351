"""Candidate binaries read as files: the names they carry, and PyTorch's compute reached below the dispatcher.

A library a candidate built (compile_c, load_inline, anything it loads) can call ATen's kernels directly
(at::cpu::mm_out, at::native::…, a redispatch), where no RecordFunction runs and the operator recorder sees
nothing, or switch the recorder off from C++ (c10::enableRecordFunction). Either needs the symbol's name
in the binary: imported (an undefined dynamic symbol), or as a string handed to dlsym. The judge reads
every identifier-like string of each candidate binary mapped into the worker and refuses one that names
such an entry point without defining it (a template of ATen's headers compiled into the library is the
library's own code).
"""

from __future__ import annotations

import ctypes
import os
import re
import struct
import sys
from typing import Any

from cudasmith.harness.workers.origins import Origins

# Where the system's and the environment's shared libraries live (a library that torch loads lazily, such
# as cuBLASLt at the first matmul, comes from one of these or from site-packages). A candidate's compiled
# extension placed here would only lose its claim to its own kernels.
SYSTEM_LIBRARY_DIRS = tuple(
    dict.fromkeys(
        [
            "/lib/",
            "/lib64/",
            "/usr/lib/",
            "/usr/lib64/",
            "/usr/local/cuda",
            "/usr/local/nvidia/",
            os.path.join(sys.prefix, "lib") + os.sep,
            os.path.join(sys.base_prefix, "lib") + os.sep,
        ]
    )
)
# What a compiled extension's binary registers as its kernels: mangled C++ names and plain identifiers.
_BINARY_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_$.]{2,512}(?=\x00)")
# PyTorch's C++ below the dispatcher (Itanium-mangled; _ZNK for const methods): structured kernels of a
# backend, native functions, redispatches, and the recorder's and the profiler's switches.
BELOW_DISPATCHER = re.compile(
    r"^_ZNK?(2at(3cpu|4cuda|4meta|6native|10redispatch|25compositeexplicitautograd"
    r"|25compositeimplicitautograd|38compositeexplicitautogradnonfunctional|20enableRecordFunction)"
    r"|3c1020enableRecordFunction|5torch8autograd8profiler|5torch8profiler)"
)
# Facts about the device under at::cuda: not compute.
DEVICE_FACTS = re.compile(
    r"^_ZNK?2at4cuda(26getCurrentDeviceProperties|19getDeviceProperties|9warp_size|6detail|12is_available"
    r"|12device_count|14current_device)"
)
_OPS = re.compile(r"^_ZNK?2at4_ops(\d+)")
# A line of /proc/self/maps that names what is mapped: the address range, four fields (permissions,
# offset, device, inode), then the path.
_MAPS_LINE = re.compile(r"^(\S+)(?:[ \t]+\S+){4}[ \t]+(\S[^\n]*)$", re.M)


class _ObjectInfo(ctypes.Structure):
    """The head of glibc's `struct dl_phdr_info`: dlpi_adds and dlpi_subs count the shared objects the
    dynamic loader has added and removed in this process."""

    _fields_ = [
        ("addr", ctypes.c_void_p),
        ("name", ctypes.c_char_p),
        ("phdr", ctypes.c_void_p),
        ("phnum", ctypes.c_uint16),
        ("adds", ctypes.c_ulonglong),
        ("subs", ctypes.c_ulonglong),
    ]


_EACH_OBJECT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_ObjectInfo), ctypes.c_size_t, ctypes.c_void_p)


class LoaderCount:
    """How many shared objects the dynamic loader has added and removed so far, asked of dl_iterate_phdr
    (a microsecond, where reading /proc/self/maps takes half a millisecond); None where the C library does not
    keep the counts. Bound when this module is imported, before any solution is."""

    def __init__(self) -> None:
        self.last: tuple[int, int] | None = None
        self._iterate: Any = None
        try:
            iterate = ctypes.CDLL(None).dl_iterate_phdr
        except (OSError, AttributeError):
            return
        iterate.argtypes = [_EACH_OBJECT, ctypes.c_void_p]
        iterate.restype = ctypes.c_int
        self._iterate = iterate
        self._callback = _EACH_OBJECT(self._first)

    def _first(self, info: Any, size: int, _data: Any) -> int:
        self.last = (info[0].adds, info[0].subs) if size >= ctypes.sizeof(_ObjectInfo) else None
        return 1  # the counts come with the first object: stop there

    def now(self) -> tuple[int, int] | None:
        if self._iterate is None:
            return None
        self.last = None
        self._iterate(self._callback, None)
        return self.last


def maps_text() -> str:
    """This process's /proc/self/maps ("" where it cannot be read)."""
    try:
        with open("/proc/self/maps") as maps:
            return maps.read()
    except OSError:
        return ""


def mapped_binaries() -> dict[str, str]:
    """Every shared object mapped into this process, however it was loaded (load_inline's extensions are
    imported without an entry in sys.modules; a library may be mapped from memory, or its file deleted),
    with the address range of one of its mappings."""
    return shared_objects(maps_text())


def shared_objects(maps: str) -> dict[str, str]:
    """The paths in /proc/self/maps's text that name a shared object, each with its first address range
    (the candidate worker reads them after every call: one pass in C, not a split per line)."""
    found: dict[str, str] = {}
    for line in _MAPS_LINE.finditer(maps):
        if ".so" in line[0]:
            found.setdefault(line[2].strip(), line[1])
    return found


def names_in_binary(data: bytes) -> list[str]:
    """Every identifier-like string in a binary (its symbols and its registered kernel names among them)."""
    return [match.decode() for match in _BINARY_NAME.findall(data)]


def read_binary(path: str, mapping: str | None = None) -> bytes:
    """A mapped binary's bytes: what is mapped (through /proc/self/map_files, which needs privileges on
    most kernels), else the file at its path unless that file was deleted or never was; b"" if neither."""
    sources = [f"/proc/self/map_files/{mapping}"] if mapping else []
    if not path.endswith("(deleted)") and not path.startswith("/memfd:"):
        sources.append(path)
    for source in sources:
        try:
            with open(source, "rb") as binary:
                return binary.read()
        except OSError:
            continue
    return b""


def _redispatch(name: str) -> bool:
    """at::_ops::<op>::redispatch: an operator entered below the dispatcher's RecordFunction."""
    match = _OPS.match(name)
    if match is None:
        return False
    rest = name[match.end() + int(match.group(1)) :]
    return rest.startswith("10redispatch")


def below_dispatcher(name: str) -> bool:
    """Whether a (mangled) symbol is PyTorch's C++ below the dispatcher or a switch of its recorder."""
    return (bool(BELOW_DISPATCHER.match(name)) and not DEVICE_FACTS.match(name)) or _redispatch(name)


def defined_symbols(data: bytes) -> set[str]:
    """Names of the symbols an ELF64 little-endian binary defines (symbol table and dynamic symbols)."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return set()
    (section_offset,) = struct.unpack_from("<Q", data, 0x28)
    entry_size, count = struct.unpack_from("<HH", data, 0x3A)
    sections = [
        struct.unpack_from("<IIQQQQIIQQ", data, section_offset + i * entry_size) for i in range(count)
    ]
    defined: set[str] = set()
    for _, kind, _, _, offset, size, link, _, _, symbol_size in sections:
        if kind not in (2, 11) or not symbol_size or link >= count:  # SHT_SYMTAB, SHT_DYNSYM
            continue
        strings = sections[link][4]
        for start in range(offset, offset + size - symbol_size + 1, symbol_size):
            name_offset, _, _, section_index = struct.unpack_from("<IBBH", data, start)
            if section_index != 0 and name_offset:  # SHN_UNDEF: imported, not defined
                end = data.find(b"\x00", strings + name_offset)
                defined.add(data[strings + name_offset : end].decode(errors="replace"))
    return defined


def torch_below_dispatcher(data: bytes) -> list[str]:
    """The PyTorch entry points below the dispatcher a binary names without defining them, sorted."""
    named = {name for name in names_in_binary(data) if below_dispatcher(name)}
    return sorted(named - defined_symbols(data)) if named else []


class CandidateBinaries:
    """The candidate's binaries mapped into the worker, each read once, for PyTorch below the dispatcher.

    The check after a call reads /proc/self/maps when the dynamic loader's counts moved since the last
    reading (dlopen, dlclose, an extension imported), and at every full check (after forward, after the
    timed calls, at the end) whatever the counts say. What the counts do not see is a file mapped without
    the loader (mmap): code run from there needs a loader of the candidate's own, which can as well place
    the same bytes in anonymous memory, where no reading of the maps sees a path at all."""

    def __init__(self, origins: Origins) -> None:
        """Made before the solution is imported: what is mapped by then is not the candidate's."""
        self.origins = origins
        self.loader = LoaderCount()
        self.counted = self.loader.now()
        self.seen = set(mapped_binaries())
        self.maps = ""
        self.found: str | None = None

    def refused(self, full: bool = True) -> str | None:
        """A reason naming the first candidate binary that calls PyTorch below the dispatcher (or that the
        judge cannot read), or None. Not `full`: the maps are read only if the loader's counts moved."""
        counted = self.loader.now()
        if not full and counted is not None and counted == self.counted:
            return self.found
        text = maps_text()
        self.counted = counted
        if text == self.maps:  # nothing mapped or unmapped since the last reading
            return self.found
        self.maps = text
        mapped = shared_objects(text)
        for path in sorted(mapped.keys() - self.seen):
            self.seen.add(path)
            if (
                self.found
                or path.startswith(SYSTEM_LIBRARY_DIRS)
                or self.origins.of_path(path) != "candidate"
            ):
                continue
            data = read_binary(path, mapped[path])
            if not data:
                self.found = f"{os.path.basename(path)} is mapped from where the judge cannot read it"
            elif names := torch_below_dispatcher(data):
                shown = ", ".join(names[:2]) + (f" and {len(names) - 2} more" if len(names) > 2 else "")
                self.found = (
                    f"{os.path.basename(path)} calls PyTorch's C++ below the dispatcher, where no operator is "
                    f"recorded ({shown}): library compute, not the solution's own"
                )
        return self.found
