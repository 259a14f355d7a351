"""The device: its speed of light as measured here (memory bandwidth, FLOP rates); its facts are
cudasmith.hardware.Device.

Peaks are measured once per device and software versions (`cudasmith device` does it, and so does the
first timed evaluation) and cached beside the kernel cache:

    peaks = cudasmith.device.load_peaks()      # None until measured
    peaks.memory_gb_per_s, peaks.compute_tflops("bfloat16")
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from cudasmith import __version__
from cudasmith.errors import UsageError
from cudasmith.hardware import device_name, no_gpu_here, read_device
from cudasmith.jsontypes import JsonDict, JsonObject
from cudasmith.runtime.cache import cache_dir, content_key, write_atomically
from cudasmith.runtime.seal import seal, unseal

# The versions a measured peak or launch cost depends on (the kernels that reach a peak come with
# PyTorch and CUDA; the driver and CUPTI, with CUDA).
PEAK_VERSION_KEYS = ("cudasmith", "torch", "cuda", "driver")
# What every command says where it finds no GPU: as an error where it needs one, as a note where it
# describes the CPU instead (commands.common.command_device).
NO_GPU = "no CUDA GPU is visible here"
NO_GPU_ERROR = f"{NO_GPU}; add --device cpu to use the CPU (where solutions are C kernels)"
# A matrix product reaches well over half the FMA rate of the units it runs on, and runs on units at least
# as fast as those (the same ones on a CPU, and for float32 on a GPU; tensor cores for the rest; cuBLAS's
# float32 GEMM reaches about 80 % of an H200's FMA rate). A matrix rate below this share of the vector
# rate of its dtype was disturbed: its long calls were preempted by other work (a loaded machine), while
# the vector kernel's short ones were not. A % SOL of matrix work at such a rate would be inflated.
MATRIX_MIN_SHARE_OF_VECTOR = 0.5


def device_kind(device: str) -> str:
    """'cuda' for 'cuda', 'cuda:1'…; 'cpu' otherwise."""
    return "cuda" if device.startswith("cuda") else "cpu"


def default_device() -> str:
    """'cuda' when a GPU is visible, else 'cpu'. Where no GPU can be there (hardware.no_gpu_here), torch
    is not imported to ask: a command's usage errors stay quick."""
    if no_gpu_here():
        return "cpu"
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def known_device(device: str) -> str:
    """`device` when it names a kind of device cudasmith knows ('cuda', 'cuda:N', 'cpu'); else a UsageError."""
    if device != "cpu" and not re.fullmatch(r"cuda(:\d+)?", device):
        raise UsageError(f"--device must be 'cuda', 'cuda:N' or 'cpu', not {device!r}")
    return device


def usable_device(device: str | None = None) -> str:
    """`device` ('cuda', 'cuda:N' or 'cpu') when this machine has it, the default device for None;
    a one-line UsageError otherwise."""
    if device is None or known_device(device) == "cpu":
        return device or default_device()
    if no_gpu_here():
        raise UsageError(NO_GPU_ERROR)
    import torch

    if not torch.cuda.is_available():
        raise UsageError(NO_GPU_ERROR)
    index = torch.device(device).index
    if index is not None and index >= torch.cuda.device_count():
        raise UsageError(f"no GPU {device}: this machine has {torch.cuda.device_count()} (cuda:0 first)")
    return device


def _package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _driver_version() -> str | None:
    """The CUDA driver's version, e.g. '13.0' (no GPU context is created)."""
    try:
        from cuda.bindings import driver

        error, version = driver.cuDriverGetVersion()
        return f"{version // 1000}.{version % 1000 // 10}" if int(error) == 0 else None
    except Exception:  # no cuda-python, or no driver on this machine
        return None


def software_versions() -> dict[str, str | None]:
    """Versions that timings depend on; computed without touching the GPU, so any process gets the same."""
    import torch  # here, not above: the CLI reads device facts and cached peaks without torch

    return {
        "cudasmith": __version__,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "driver": _driver_version(),
        "triton": _package_version("triton"),
    }


@dataclass(frozen=True)
class DevicePeaks:
    """What the device achieves here: device-memory bandwidth and FLOP rates per dtype."""

    device: str
    kind: str
    memory_gb_per_s: float
    matrix_tflops: dict[str, float]
    vector_tflops: dict[str, float]
    # Bytes that may stay on chip between or during calls (the GPU's L2, the CPU's last-level cache).
    cache_bytes: int
    memory_detail_gb_per_s: dict[str, float] = field(default_factory=dict)
    versions: dict[str, str | None] = field(default_factory=dict)
    measured_at: str = ""
    seconds: float = 0.0

    def compute_tflops(self, dtype: str | None) -> float | None:
        """The best FLOP rate for a dtype (matrix or vector units), in TFLOP/s; None if not measured."""
        rates = [table[dtype] for table in (self.matrix_tflops, self.vector_tflops) if dtype in table]
        return max(rates) if rates else None

    def doubts(self) -> list[str]:
        """What in these rates the device cannot have done undisturbed, in words: each dtype whose matrix
        units measured below MATRIX_MIN_SHARE_OF_VECTOR of its vector units."""
        return [
            f"{dtype} matrix units measured at {matrix:.3g} TFLOP/s, below {MATRIX_MIN_SHARE_OF_VECTOR:.0%} "
            f"of its vector units' {vector:.3g}"
            for dtype, matrix in self.matrix_tflops.items()
            if (vector := self.vector_tflops.get(dtype)) and matrix < MATRIX_MIN_SHARE_OF_VECTOR * vector
        ]

    def max_tflops(self) -> float:
        """The highest FLOP rate measured for any dtype, in TFLOP/s."""
        return max([*self.matrix_tflops.values(), *self.vector_tflops.values(), 0.0])

    def to_dict(self) -> JsonDict:
        """The JSON form (the cache file's content)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: JsonObject) -> DevicePeaks:
        """Rebuild from to_dict()'s output (a key another version wrote and this one lacks is dropped)."""
        names = {f.name for f in fields(cls)}
        return cls(**{name: value for name, value in data.items() if name in names})


# What the MAC of a cached measurement says it is (runtime/seal.py).
PEAKS_PURPOSE = "device-peaks"
LAUNCH_COST_PURPOSE = "launch-cost"


def measurement_path(prefix: str, name: str, versions: dict[str, str | None]) -> Path:
    """The cache file of one measurement of a device under one set of software versions."""
    relevant = {key: versions.get(key) for key in PEAK_VERSION_KEYS}
    return cache_dir("device") / f"{prefix}{content_key(name, json.dumps(relevant, sort_keys=True))}.json"


def peaks_path(name: str, versions: dict[str, str | None]) -> Path:
    """The cache file of one device's peaks under one set of software versions."""
    return measurement_path("", name, versions)


def load_peaks(device: str | None = None, name: str | None = None) -> DevicePeaks | None:
    """The measured peaks of a device (by default this machine's GPU, or its CPU when it has no GPU);
    None when never measured. A GPU that is not here is a one-line UsageError.

    `name` (as a verdict names the device) avoids initialising CUDA in the calling process.
    """
    path = peaks_path(name or device_name(usable_device(device)), software_versions())
    try:
        data = unseal(json.loads(path.read_text()), PEAKS_PURPOSE)
    except (OSError, ValueError):
        return None
    try:  # a file that fails its MAC was not written by the judge: the peaks are measured again
        return DevicePeaks.from_dict(data) if data is not None else None
    except TypeError:
        return None


def save_peaks(peaks: DevicePeaks) -> Path:
    """Cache measured peaks; returns the file."""
    path = peaks_path(peaks.device, peaks.versions)
    write_atomically(path, json.dumps(seal(peaks.to_dict(), PEAKS_PURPOSE), indent=2).encode())
    return path


def cache_bytes(device: str) -> int:
    """Bytes that may stay on chip: the GPU's L2 or the CPU's last-level cache."""
    return read_device(device).cache_bytes
