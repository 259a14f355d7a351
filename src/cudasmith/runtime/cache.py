"""The on-disk cache of compiled kernels, shared by every worker process of a machine."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def cache_dir(kind: str) -> Path:
    """The directory for one kind of cached artefact; CUDASMITH_CACHE moves the whole cache."""
    root = Path(os.environ.get("CUDASMITH_CACHE") or Path.home() / ".cache" / "cudasmith")
    path = root / kind
    path.mkdir(parents=True, exist_ok=True)
    return path


def content_key(*parts: str | bytes) -> str:
    """A stable hash of everything that determines a compiled artefact."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()[:32]


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
