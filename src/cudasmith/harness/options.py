"""How candidates are judged: the options of a judge session, and the time limits they imply.

The defaults are the protocol. Every defence is on unless `defences=False`, which exists only to
measure what they cost and makes a verdict that judges nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass

from cudasmith.device import known_device
from cudasmith.errors import UsageError
from cudasmith.harness.walls import sandbox
from cudasmith.harness.wire.fields import JsonObject, known_fields
from cudasmith.jsontypes import JsonDict
from cudasmith.timing.protocol import L2_STATES

# Each config is checked on this many independently drawn input sets.
SEEDS_PER_CONFIG = 3
# Importing the solution, its compilation included (a load_inline build takes ~45 s on an H200).
LOAD_TIMEOUT_S = 120.0
# The judge's own workers (reference, baselines) loading the problem: importing it, building its model and
# EXPERT (which may compile), making the first inputs. Not a candidate's allowance, so not an option.
PROBLEM_LOAD_TIMEOUT_S = 300.0
# Added to the first call's limit: Triton compiles and autotunes then.
FIRST_CALL_EXTRA_S = 10.0
# Without a --time-limit, a call may take this many times the reference's own time, and at least CALL_FLOOR_S.
CALL_FACTOR = 100.0
CALL_FLOOR_S = 5.0
# Checking one config may take this long, as estimated before it starts (check_time.py): past it, the config
# is too large for the device (a smaller one is skipped, the smallest refused), unless --config-time-limit
# raises it. Ten minutes: an hour-long check of one config is no judge's answer to a first `eval`.
CONFIG_TIME_LIMIT_S = 600.0
# Timing one config: making its input sets, warming up and sampling, beyond the calls themselves.
TIMING_EXTRA_S = 30.0
# Timed calls whose outputs are re-checked against the reference, per config. Every timed call's outputs are
# kept (as many as fit, harness/witnesses/rechecks.py); which are re-checked is drawn by the parent once the
# worker is stopped, uniformly over those kept. A candidate that skips the work on the half of the calls that
# moves the median escapes every check with probability at most 2**-20 (below one in a million); slow kernels
# with fewer timed calls than this have every call checked.
TIMED_CHECKS = 20
# Candidate workers started ahead of need (torch imported, CUDA context made): one per candidate. On
# the H100 machine a worker takes about 4 s to start and a warm candidate about 2 s to judge: at one
# candidate in flight, two ahead ran out (a candidate in two or three waited ~3 s), three keep up.
WARM_WORKERS_GPU = 3
WARM_WORKERS_CPU = 1
# Candidates judged at once by a session (each in its own worker; timing windows stay exclusive), by
# default: on a GPU, a pair of cores and GPU_MEMORY_PER_CANDIDATE each (a candidate's import, build and
# calls keep about one core busy, and the judge's side the other); on the CPU, one per core (its timing
# windows pause the rest, so a core each is what the other phases can overlap on).
IN_FLIGHT_MAX = 8
CORES_PER_CANDIDATE_GPU = 2
GPU_MEMORY_PER_CANDIDATE = 4 * 1024**3
# Named rules: "strict", the solution's own kernels do the work (the problem's allowlist aside);
# "kernelbench", PyTorch compute allowed everywhere, as KernelBench allows it (verdicts still say which
# operators ran and what share of the time the solution's own kernels took).
RULES = ("strict", "kernelbench")

# Told how far a long job is: (what is being done, steps done, steps in all). A message that starts with
# WARNING is no step but a warning to keep in view (report/progress.py prints it on a line of its own).
Progress = Callable[[str, int, int], None]
WARNING = "warning: "


@dataclass(frozen=True)
class EvalOptions:
    """How a judge session runs; the defaults are the protocol."""

    device: str = "cuda"
    seeds_per_config: int = SEEDS_PER_CONFIG
    # The session's secret seed (drawn fresh when None); a verdict records it, so a run can be replayed.
    seed: int | None = None
    timing: bool = True
    load_timeout_s: float = LOAD_TIMEOUT_S
    first_call_extra_s: float = FIRST_CALL_EXTRA_S
    # One call of forward; None: CALL_FACTOR times the reference's own time, at least CALL_FLOOR_S.
    call_timeout_s: float | None = None
    timed_checks: int = TIMED_CHECKS
    # Widen the problem's allowlist of PyTorch operators inside forward: "all" or ATen names.
    allow_torch_ops: str | tuple[str, ...] = ()
    # The rules judged under (RULES).
    rules: str = "strict"
    # Also check each config on inputs the harness draws itself (signed, wider range).
    drawn_inputs: bool = True
    # Draw module parameters (the same for Model and ModelNew where theirs match) instead of the defaults.
    drawn_parameters: bool = True
    # Refuse forbidden constructs by reading the source before running anything.
    screen: bool = True
    # Host memory a worker and everything it starts may use (default: half the machine's).
    memory_limit_bytes: int | None = None
    # Off only to measure what the defences cost. Such a verdict says so and judges nothing.
    defences: bool = True
    # Baselines timed beside eager PyTorch (None: baselines.default_baselines for the device).
    baselines: tuple[str, ...] | None = None
    # L2 state while timing (None: the problem's L2_STATE, cold unless it says hot).
    l2_state: str | None = None
    # Time CUDA-graph replays of each call (for launch-bound kernels) instead of queued calls.
    graph: bool = False
    # Candidate workers kept started ahead (None: WARM_WORKERS_GPU or WARM_WORKERS_CPU, or in_flight if more).
    warm_workers: int | None = None
    # Refuse to judge where candidates' files cannot be isolated (sandbox.py); otherwise such verdicts
    # say "filesystem not isolated".
    require_isolation: bool = False
    # Candidates judged at once by a session (None: default_in_flight for the device).
    in_flight: int | None = None
    # Screen, then confirm (a search's mode; harness/confirm.py): a correct candidate is first timed
    # briefly, and timed by the full protocol only where its screen comes within this margin of the run's
    # best kernel so far or of the baseline. None: every correct candidate gets the full protocol, as
    # `eval` and `bench` always do.
    confirm_margin: float | None = None
    # Longest a config's check may be estimated to take (check_time.py); a larger config is not checked.
    config_time_limit_s: float = CONFIG_TIME_LIMIT_S

    def validate(self) -> None:
        """Raise UsageError for options that cannot work, naming the option as the command spells it."""
        known_device(self.device)
        if self.rules not in RULES:
            raise UsageError(f"--rules must be {' or '.join(RULES)}, not {self.rules!r}")
        if self.l2_state is not None and self.l2_state not in L2_STATES:
            raise UsageError(f"--l2 must be {' or '.join(L2_STATES)}, not {self.l2_state!r}")
        if self.graph and not self.device.startswith("cuda"):
            raise UsageError("--graph (CUDA-graph timing) needs a GPU: give --device cuda")
        if self.seeds_per_config < 1:
            raise UsageError("--seeds must be at least 1 (input sets checked per config)")
        if not self.load_timeout_s > 0:
            raise UsageError(
                f"--load-time-limit must be a positive number of seconds, not {self.load_timeout_s:g}"
            )
        if self.first_call_extra_s < 0:
            raise UsageError(f"--first-call-extra must not be negative, not {self.first_call_extra_s:g}")
        if self.memory_limit_bytes is not None and self.memory_limit_bytes <= 0:
            raise UsageError("--memory-limit must be a positive number of GiB")
        if self.call_timeout_s is not None and not self.call_timeout_s > 0:
            raise UsageError(
                f"--time-limit must be a positive number of seconds, not {self.call_timeout_s:g}"
            )
        if not self.config_time_limit_s > 0:
            raise UsageError(
                f"--config-time-limit must be a positive number of seconds, not {self.config_time_limit_s:g}"
            )
        if self.in_flight is not None and not 1 <= self.in_flight <= 64:
            raise UsageError(f"--in-flight must be from 1 to 64, not {self.in_flight}")
        if self.confirm_margin is not None and not 0 < self.confirm_margin <= 1:
            raise UsageError(
                f"the screen's margin must be above 0 and at most 1, not {self.confirm_margin:g}"
            )
        self.check_isolation()

    def check_isolation(self) -> None:
        """With require_isolation, a UsageError where candidates' files cannot be isolated here."""
        if self.require_isolation and (why := sandbox.unavailable()):
            raise UsageError(f"refusing to judge (--require-isolation): {why}")

    @property
    def on_gpu(self) -> bool:
        return self.device.startswith("cuda")

    @property
    def gpu_index(self) -> int | None:
        """The GPU a session uses: None on the CPU, 0 for plain 'cuda'."""
        if not self.on_gpu:
            return None
        return int(self.device[5:]) if self.device.startswith("cuda:") else None

    def call_limit_s(self, reference_s: float | None) -> float:
        """The limit of one call, from --time-limit or from the reference's own time."""
        if self.call_timeout_s is not None:
            return self.call_timeout_s
        return max(CALL_FLOOR_S, CALL_FACTOR * (reference_s or 0.0))

    def stored(self) -> JsonDict:
        """The options as a run store keeps them (JSON; the secret seed has a column of its own)."""
        data = asdict(self)
        data.pop("seed")
        return data

    @classmethod
    def from_stored(cls, data: JsonObject, seed: int | None) -> EvalOptions:
        """Options a run stored; fields this version no longer has (a run from an older one) are dropped."""
        values = known_fields(cls, data)
        values.pop("seed", None)
        for name in ("allow_torch_ops", "baselines"):
            if isinstance(values.get(name), list):
                values[name] = tuple(values[name])
        return cls(**values, seed=seed)

    def warm(self) -> int:
        """How many candidate workers to keep started ahead."""
        if self.warm_workers is not None:
            return max(0, self.warm_workers)
        return max(self._warm_default(), self.candidates_in_flight())

    def warm_floor(self) -> int:
        """How many candidate workers a session keeps started ahead when no candidate is known to wait."""
        return min(self.warm(), self._warm_default())

    def _warm_default(self) -> int:
        return WARM_WORKERS_GPU if self.on_gpu else WARM_WORKERS_CPU

    def candidates_in_flight(self, lanes: int = 1) -> int:
        """How many candidates a session judges at once: `in_flight`, or the device's default."""
        return self.in_flight if self.in_flight is not None else default_in_flight(self.device, lanes)


def default_in_flight(device: str, lanes: int = 1) -> int:
    """Candidates in flight per session when none is asked for, from the host's cores (shared by `lanes`
    sessions) and, on a GPU, its memory."""
    cores = max(1, (os.cpu_count() or 1) // max(1, lanes))
    if not device.startswith("cuda"):
        return max(1, min(IN_FLIGHT_MAX, cores))
    by_memory = IN_FLIGHT_MAX
    try:
        import torch

        index = int(device.partition(":")[2] or 0)
        by_memory = torch.cuda.get_device_properties(index).total_memory // GPU_MEMORY_PER_CANDIDATE
    except Exception:  # no GPU here (options checked on another machine): the cores decide
        pass
    return max(1, min(IN_FLIGHT_MAX, cores // CORES_PER_CANDIDATE_GPU, by_memory))
