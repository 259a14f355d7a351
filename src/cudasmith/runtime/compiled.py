"""What one process compiled (kernels, C functions), kept by content key beside the shared cache on disk."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Generic, TypeVar

from cudasmith.runtime.cache import content_key
from cudasmith.runtime.signature import Param

Built = TypeVar("Built")


@dataclass(kw_only=True)
class Compiled:
    """What every build keeps beside its artifact (a CUDA kernel's cubin, a C function's library): the
    function's name and parameters, the compiler's log, the build's time and whether the cache had it."""

    name: str
    params: list[Param] | None
    log: str = ""
    compile_seconds: float = 0.0
    from_cache: bool = False


class ProcessCache(Generic[Built]):
    """What this process compiled (kernels, C functions), by content key; its threads share it."""

    def __init__(self) -> None:
        self._built: dict[str, Built] = {}
        self.lock = threading.Lock()

    @staticmethod
    def key(key: str, disk_cache: bool) -> str:
        """The key in this cache: a build made in memory (`disk_cache=False`) has keys of its own, so a
        library from the shared cache on disk never stands in for it."""
        return key if disk_cache else content_key(key, "memory")

    def get(self, key: str) -> Built | None:
        with self.lock:
            return self._built.get(key)

    def add(self, key: str, built: Built) -> Built:
        with self.lock:
            self._built[key] = built
        return built

    def values(self) -> list[Built]:
        with self.lock:
            return list(self._built.values())

    def clear(self) -> None:
        with self.lock:
            self._built.clear()
