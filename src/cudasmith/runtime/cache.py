"""The on-disk cache (compiled kernels, baseline times, device measurements), shared by every process of
a machine: ~/.cache/cudasmith, or wherever CUDASMITH_CACHE points. Each kind lives in its own folder."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cudasmith.errors import UsageError
from cudasmith.runtime import seal

# What each kind of cache folder holds, as `cudasmith cache` describes it. What a judged solution compiles
# goes into its own folder under extensions/ (see cache_dir and extension_root), never into cuda/ or cpu/.
CACHE_KINDS = {
    "cuda": "CUDA kernels NVRTC compiled (compile_cuda) outside a judged solution: the judge's own, your scripts'",
    "cpu": "C and C++ kernels the system compiler built (compile_c) outside a judged solution",
    "extensions": "what each judged solution built, a folder per solution: its compile_c and compile_cuda "
    "kernels and torch extensions (load_inline, load)",
    "baselines": "baseline times of earlier sessions per task, config and device (a seed for time limits, "
    "shown beside fresh ones); kept only when timed quietly, so a busy machine keeps none",
    "device": "measured device peaks and the calibrated kernel launch cost",
}
# Set in a candidate's worker to its solution's build folder (see extension_root): a sandboxed worker
# writes nowhere else in the cache, so one candidate cannot plant a library another one loads.
BUILD_DIR_ENV = "CUDASMITH_BUILD_DIR"
BUILT_KINDS = ("cuda", "cpu")
# What the MAC of a compiled artefact in the shared cache says it is.
ARTIFACT_PURPOSE = "compiled-artifact"


def cache_root() -> Path:
    """The cache's folder (not created here): $CUDASMITH_CACHE, else ~/.cache/cudasmith."""
    return Path(os.environ.get("CUDASMITH_CACHE") or Path.home() / ".cache" / "cudasmith")


def cache_dir(kind: str) -> Path:
    """The directory for one kind of cached artefact; CUDASMITH_CACHE moves the whole cache. In a candidate's
    worker, what it compiles (the kinds in BUILT_KINDS) goes into its solution's own build folder."""
    build = os.environ.get(BUILD_DIR_ENV)
    path = Path(build) / f"_{kind}" if build and kind in BUILT_KINDS else cache_root() / kind
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass(frozen=True)
class CacheKind:
    """One kind of cached artefact as it is on disk now."""

    kind: str
    path: Path
    files: int
    bytes: int
    holds: str


def cache_usage() -> list[CacheKind]:
    """Every kind of artefact in the cache (known kinds first, each even when empty), with its size."""
    root = cache_root()
    present = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    usage = []
    for kind in [*CACHE_KINDS, *(k for k in present if k not in CACHE_KINDS)]:
        files = [f for f in (root / kind).rglob("*") if f.is_file()] if kind in present else []
        size = sum(f.stat().st_size for f in files)
        usage.append(
            CacheKind(kind, root / kind, len(files), size, CACHE_KINDS.get(kind, "(not known here)"))
        )
    return usage


def clear_cache(kind: str | None = None) -> int:
    """Delete the cached artefacts of one kind (every kind for None); returns the bytes freed. The
    folders stay, so processes writing into them meanwhile are not broken."""
    usage = cache_usage()
    if kind is not None and kind not in {entry.kind for entry in usage}:
        known = ", ".join(entry.kind for entry in usage)
        raise UsageError(f"no cache kind {kind!r}; the kinds are {known}")
    freed = 0
    for entry in usage:
        if kind is not None and entry.kind != kind:
            continue
        for item in entry.path.iterdir() if entry.path.is_dir() else []:
            if item.is_dir() and not item.is_symlink():
                shutil.rmtree(item, ignore_errors=True)
            else:
                item.unlink(missing_ok=True)
        freed += entry.bytes
    return freed


def extension_root(solution_source: str, base: str | None = None) -> Path:
    """Where a solution's torch.utils.cpp_extension builds go (TORCH_EXTENSIONS_DIR in its worker).

    One folder per solution's content: torch keys a build by the extension's name alone, so two
    solutions that both call theirs `my_ext`, judged at once, would load each other's library; one
    solution's build worker and its judged worker share the folder, so the judged one finds the build.
    `base`: the user's own TORCH_EXTENSIONS_DIR, under which the folders go instead."""
    return extensions_base(base) / content_key("extension", solution_source)[:24]


def extensions_base(base: str | None = None) -> Path:
    """The folder holding every solution's build folder: `base` (the user's TORCH_EXTENSIONS_DIR) or the
    cache's extensions folder (not created here)."""
    return Path(base) if base else cache_root() / "extensions"


def content_key(*parts: str | bytes) -> str:
    """A stable hash of everything that determines a compiled artefact."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()[:32]


def artifact_trusted(key: str, *files: Path) -> bool:
    """Whether the cached files of one compiled artefact are what the judge compiled under `key` (their MAC,
    runtime/seal.py), before they are loaded. A candidate's build folder is sealed as a whole by the parent
    instead (harness/walls/scratch.py); a sandboxed worker cannot read the key, and its shared cache is
    read-only to it, so there they count as trusted."""
    if os.environ.get(BUILD_DIR_ENV):
        return True
    try:
        recorded = _mac_path(files[0]).read_text()
        return seal.verify(recorded, ARTIFACT_PURPOSE, key, *(f.read_bytes() for f in files))
    except FileNotFoundError:
        return False
    except OSError:
        return True


def seal_artifact(key: str, *files: Path) -> None:
    """Record the MAC of a compiled artefact just written into the shared cache."""
    if not os.environ.get(BUILD_DIR_ENV):
        write_atomically(
            _mac_path(files[0]), seal.mac(ARTIFACT_PURPOSE, key, *(f.read_bytes() for f in files)).encode()
        )


def _mac_path(path: Path) -> Path:
    return path.with_name(path.name + ".mac")


def write_atomically(path: Path, data: bytes) -> None:
    """Write a cache entry so that concurrent readers never see half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
