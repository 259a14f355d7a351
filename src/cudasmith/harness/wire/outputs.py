"""What a candidate's worker answers about its calls: outputs by reference (transfer.py reads them), what ran in
them, the timed calls it kept for the parent's draw, the evidence the defences owe, and the judge's empty calls
timed before a solution loads. Replies of messages.py's requests, read field by field (fields.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from cudasmith.timing.protocol import Measurement

# Sizes (dimensions, byte counts) a reply may name: what fits a signed 64-bit integer, as torch's do.
MAX_SIZE = 2**63


@dataclass(frozen=True)
class Calibrated:
    """The judge's own empty calls timed by the timing protocol before any solution loaded, measured by the
    worker itself (nothing of a candidate's has run in it yet): the calls (warm-up included) and samples, their
    own times added up as the protocol takes them (on a GPU the host's time to issue each and its GPU span),
    the samples' share of the wall time, and on the CPU the call thread's CPU time. What a call costs beyond
    its own time, which the parent's clock check allows for (harness/witnesses/bracket.py)."""

    calls: int
    samples: int
    claimed_ms: float
    sampled_ms: float
    sampling_s: float
    call_cpu_s: float | None = None


@dataclass(frozen=True)
class Evidence:
    """What a candidate's worker owes each reply while the defences are on: that its recording of what ran
    was whole, how many integrity checks it ran, how many threads the last one saw, and (timed calls) how
    many calls the recording saw inside the markers it puts around them. A reply without it, or with less
    than its calls need, is judge state tampered with (harness/witnesses/rechecks.py)."""

    recorded: bool
    checks: int
    threads: int
    marked_calls: int = 0


@dataclass(frozen=True)
class OutputRef:
    """Where the judge finds one output (transfer.py): CUDA IPC, a shared-memory file, or nothing (empty)."""

    dtype: str
    shape: list[int]
    kind: Literal["empty", "cuda_ipc", "shm"]
    nbytes: int = 0
    # CUDA IPC: the allocation's handle (hex), the output's offset into it, the allocation's size.
    handle: str = ""
    offset: int = 0
    allocation: int = 0
    # Shared memory: the file's name in /dev/shm.
    name: str = ""

    def __post_init__(self) -> None:
        # Sizes a tensor can have: a forged reference is refused where it is read, not where it is used.
        if any(
            not 0 <= number < MAX_SIZE for number in (*self.shape, self.nbytes, self.offset, self.allocation)
        ):
            raise ValueError(f"sizes out of range in an output reference: {self.shape}, {self.nbytes} bytes")


@dataclass(frozen=True)
class Ran:
    """One call's exported outputs and what ran inside it (PyTorch operators; GPU time, own and all)."""

    outputs: list[OutputRef]
    torch_ops: dict[str, int] = field(default_factory=dict)
    own_ns: int = 0
    gpu_ns: int = 0
    # The fresh perturbation the inputs had (Run.fresh_perturbation), for the reference computed after.
    perturb: int | None = None
    # None when the worker's defences were off (a rejection while the parent's are on).
    evidence: Evidence | None = None
    # Work ran on a stream other than the caller's, and the records did not say what each wait waited for:
    # the end-of-forward marker alone checked it (a note in the verdict; the worker's claim, so it can only
    # add a caveat, never remove a check).
    side_streams_unread: bool = False


@dataclass(frozen=True)
class TimedCheck:
    """A timed call whose outputs were kept for the parent to draw from: its sample, its input set and
    perturbation, how many outputs."""

    call: int
    set: int
    perturb: int
    n_outputs: int

    def __post_init__(self) -> None:
        if self.call < 0 or self.set < 0 or self.n_outputs < 0:
            raise ValueError("a timed call's sample, input set and output count are never negative")


@dataclass(frozen=True)
class Timed:
    """A measurement (rebuilt from its raw samples: the statistics are the parent's) and, for a candidate,
    the kept outputs of its timed calls (every one, as many as fit: the parent draws which to re-check once
    the worker is stopped) and what ran in them."""

    measurement: Measurement
    input_sets: int = 0
    checks: list[TimedCheck] = field(default_factory=list)
    outputs: list[OutputRef] = field(default_factory=list)
    own_share: float | None = None
    library_kernels: list[str] = field(default_factory=list)
    torch_ops: dict[str, int] = field(default_factory=dict)
    compute_ns: int = 0
    evidence: Evidence | None = None

    def __post_init__(self) -> None:
        # The judge computes the statistics from the samples: there must be some, and each a time.
        samples = self.measurement.samples_ms
        if not samples or not all(math.isfinite(s) and s >= 0 for s in samples):
            raise ValueError("a measurement needs samples, each a finite time")
