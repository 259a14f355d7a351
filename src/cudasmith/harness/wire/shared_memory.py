"""Where a candidate's worker puts the outputs it hands the judge on the CPU: a folder of shared memory of
its own, named by the worker's token, which the parent makes before the worker starts and its sandbox
lets it alone write (harness/walls/scratch.py). No candidate in flight reads or writes another's."""

from __future__ import annotations

import os
from pathlib import Path

SHM_DIR = Path("/dev/shm")
SHM_PREFIX = "cudasmith-"
# Set in a candidate's worker to its folder (shared_memory_folder).
SHARED_MEMORY_ENV = "CUDASMITH_SHARED_MEMORY"


def shared_memory_folder(token: str) -> Path:
    """The folder of shared memory of the worker whose token this is."""
    return SHM_DIR / f"{SHM_PREFIX}{token}"


def own_shared_memory(token: str) -> Path:
    """This worker's folder: the one its parent made (SHARED_MEMORY_ENV), else its token's, made now."""
    given = os.environ.get(SHARED_MEMORY_ENV)
    folder = Path(given) if given else shared_memory_folder(token)
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder
