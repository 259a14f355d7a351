"""Cold means cold: L2 lines a call marked persisting are let go before the next sample.

A kernel can pin data in L2: an access-policy window (on its stream, its launch or a graph node) with
hitProp = persisting keeps those lines in the context's persisting set-aside (cudaLimitPersistingL2CacheSize),
and the flush before a cold sample, which evicts normal lines, leaves them there. A call could pin its
inputs and find them in L2 at every later sample (3,530 GB/s was reported against 714 GB/s real). While a
cold measurement samples, therefore:
  - the persisting set-aside is 0 (what it was is restored afterwards), so no line can persist;
  - before each sample's flush, every persisting line is made normal (cuCtxResetPersistingL2Cache) and
    the timing stream's access-policy window is cleared, so the flush evicts everything and runs as the
    harness launched it.
A call may still pin lines within itself (its own window, its own set-aside): that is its own business
and gone before the next sample.

The driver's functions are captured when this module is imported, which the worker does (through
timing.cuda) before any solution loads: a candidate that replaces them changes nothing here.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

try:
    from cuda.bindings import driver as _driver

    CAPTURED: Any = SimpleNamespace(
        reset=_driver.cuCtxResetPersistingL2Cache,
        get_limit=_driver.cuCtxGetLimit,
        set_limit=_driver.cuCtxSetLimit,
        set_stream_attribute=_driver.cuStreamSetAttribute,
        device_attribute=_driver.cuDeviceGetAttribute,
        get_device=_driver.cuCtxGetDevice,
        stream=_driver.CUstream,
        limit=_driver.CUlimit.CU_LIMIT_PERSISTING_L2_CACHE_SIZE,
        window=_driver.CUstreamAttrID.CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW,
        no_window=_driver.CUstreamAttrValue(),  # num_bytes 0: no window
        max_persisting=_driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE,
    )
except (ImportError, AttributeError):  # no cuda-python, or one too old to name these
    CAPTURED = None


def _ok(result: Any) -> bool:
    """Whether a cuda-python call's (error, *values) tuple says success."""
    return int(result[0]) == 0


class PersistingL2:
    """Keeps persisting L2 lines out of cold samples on the current context (see the module's docstring).

    `hold()` before sampling, `before_sample(stream)` after the previous call and the caller's own
    preparation finished and before the flush, `release()` after sampling. Nothing is done on a GPU
    without persisting L2 (before Ampere). A failure is one warning, after which the guard stops.
    """

    def __init__(self, cuda: Any = None) -> None:
        self.cuda = cuda if cuda is not None else CAPTURED
        self.warnings: list[str] = []
        self._saved_limit: int | None = None
        self._clear_window = True
        self.active = self.cuda is not None and self._supported()

    def _supported(self) -> bool:
        error, device = self.cuda.get_device()
        if int(error) != 0:
            return False
        found = self.cuda.device_attribute(self.cuda.max_persisting, device)
        return _ok(found) and found[1] > 0

    def _fail(self, what: str, result: Any) -> None:
        self.warnings.append(
            f"{what} failed ({result[0]}): lines a call pinned in L2 may have survived the flush"
        )
        self.active = False

    def hold(self) -> None:
        """Set the persisting set-aside to 0 for the sampling, keeping what it was."""
        if not self.active:
            return
        found = self.cuda.get_limit(self.cuda.limit)
        if not _ok(found):
            self._fail("reading the persisting L2 limit", found)
            return
        self._saved_limit = int(found[1])
        result = self.cuda.set_limit(self.cuda.limit, 0)
        if not _ok(result):
            self._fail("setting the persisting L2 limit to 0", result)

    def before_sample(self, stream: int) -> None:
        """Make every persisting line normal and clear the stream's access-policy window."""
        if not self.active:
            return
        result = self.cuda.reset()
        if not _ok(result):
            self._fail("resetting persisting L2 lines", result)
            return
        if self._clear_window:
            cleared = self.cuda.set_stream_attribute(
                self.cuda.stream(stream), self.cuda.window, self.cuda.no_window
            )
            # A stream that takes no attributes (the legacy default stream, on some drivers) cannot
            # carry a window either: nothing to clear, then or later.
            self._clear_window = _ok(cleared)

    def release(self) -> None:
        """Give the persisting set-aside back what it was before hold()."""
        if self._saved_limit is None:
            return
        saved, self._saved_limit = self._saved_limit, None
        result = self.cuda.set_limit(self.cuda.limit, saved)
        if not _ok(result):
            self.warnings.append(f"restoring the persisting L2 limit failed ({result[0]})")
