"""The roofline of one config: the fastest a call could run on this device, and what is impossible.

Speed of light is the time at the device's measured peaks: the larger of the config's bytes over the
memory bandwidth and its FLOPs over the task dtype's FLOP rate. The floor is stricter: peaks PHYSICS_MARGIN
times the measured ones, the best FLOP rate of any dtype, and every byte that could stay on chip (the L2
or last-level cache) taken as free. A time is called impossible only under the floor's bytes: the FLOPs
are the reference's operators', and an algebraic shortcut (diag(a) @ b as a row scaling) does fewer.

A dtype whose rate was not measured (bfloat16 on a CPU, integers anywhere) is given, for speed of light,
the best rate measured for any dtype: the rate the floor assumes before its margin. Both therefore count
the same FLOPs at consistent rates, and the floor never exceeds speed of light, whatever the dtype.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from cudasmith.device import DevicePeaks
from cudasmith.harness.wire.fields import JsonObject
from cudasmith.harness.wire.results import ConfigDescription
from cudasmith.jsontypes import JsonDict

# Measured peaks are what good kernels reach, not what the hardware could: on the GPU the best kernels
# come within a few per cent of the measured bandwidth; a shared CPU's bandwidth depends on what else
# runs, and peaks measured on a busy machine may be a fraction of what a quiet one achieves.
PHYSICS_MARGIN = {"cuda": 1.25, "cpu": 4.0}
# Tasks that name no dtype are judged at float32's FLOP rate (KernelBench's problems are float32).
DEFAULT_DTYPE = "float32"


@dataclass(frozen=True)
class Roofline:
    """One config's roofline point: work, speed of light and floor (milliseconds), and the FLOP rate
    speed of light assumes (None when no rate was measured: then it counts bytes only)."""

    flops: float
    bytes: float
    sol_ms: float
    floor_ms: float
    bound: str
    # The floor that makes a time impossible: bytes only. FLOPs are the reference's, and an algebraic
    # shortcut does fewer (diag(a) @ b as a row scaling), so beating their floor is possible.
    memory_floor_ms: float
    memory_gb_per_s: float
    compute_tflops: float | None

    def sol_pct(self, time_ms: float | None) -> float | None:
        """How close a time comes to speed of light, in per cent."""
        return 100 * self.sol_ms / time_ms if time_ms and self.sol_ms > 0 else None

    def impossible(self, time_ms: float) -> str | None:
        """Why a time is physically impossible, or None."""
        if time_ms <= 0 < self.bytes:
            return f"no work on the device at all for {self.bytes / 1e6:.3g} MB of inputs and outputs: impossible"
        if time_ms >= self.memory_floor_ms:
            return None
        return (
            f"{time_ms * 1e3:.2f} µs is under the roofline floor of {self.memory_floor_ms * 1e3:.2f} µs "
            f"({self.bytes / 1e6:.3g} MB at {self.memory_gb_per_s:.0f} GB/s measured): impossible"
        )

    def to_dict(self) -> JsonDict:
        """The JSON form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: JsonObject) -> Roofline:
        """From the JSON form (a field it lacks, from a verdict of an older judge, reads as zero)."""
        known = {item.name: data.get(item.name, 0.0) for item in fields(cls)}
        return cls(
            **{**known, "bound": str(data.get("bound", "")), "compute_tflops": data.get("compute_tflops")}
        )


def work_of(description: ConfigDescription) -> tuple[float, float] | None:
    """FLOPs and bytes of a config from the reference's description; None when unknown.

    Bytes: the problem's bytes_moved(), else inputs and parameters read once plus outputs written once.
    """
    if description.bytes_moved is not None:
        moved = float(description.bytes_moved)
    elif description.input_bytes is not None and description.output_bytes is not None:
        moved = float(description.input_bytes + description.output_bytes + (description.parameter_bytes or 0))
    else:
        return None
    return float(description.flops or 0), moved


def roofline(description: ConfigDescription, dtype: str | None, peaks: DevicePeaks) -> Roofline | None:
    """The roofline point of a config on a device; None when the config's work is unknown."""
    work = work_of(description)
    if work is None or peaks.memory_gb_per_s <= 0:
        return None
    flops, moved = work
    memory_ms = moved / (peaks.memory_gb_per_s * 1e9) * 1e3
    best_tflops = peaks.max_tflops()
    compute_tflops = peaks.compute_tflops(dtype or DEFAULT_DTYPE) or best_tflops or None
    compute_ms = flops / (compute_tflops * 1e12) * 1e3 if compute_tflops else 0.0
    margin = PHYSICS_MARGIN.get(peaks.kind, PHYSICS_MARGIN["cuda"])
    floor_memory_ms = max(0.0, moved - peaks.cache_bytes) / (margin * peaks.memory_gb_per_s * 1e9) * 1e3
    floor_compute_ms = flops / (margin * best_tflops * 1e12) * 1e3 if best_tflops > 0 else 0.0
    return Roofline(
        flops=flops,
        bytes=moved,
        sol_ms=max(memory_ms, compute_ms),
        floor_ms=max(floor_memory_ms, floor_compute_ms),
        memory_floor_ms=floor_memory_ms,
        bound="compute" if compute_ms > memory_ms else "memory",
        memory_gb_per_s=peaks.memory_gb_per_s,
        compute_tflops=compute_tflops,
    )
