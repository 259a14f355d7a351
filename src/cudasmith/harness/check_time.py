"""How long checking a config will take, estimated before it starts: from the config's bytes (its inputs and
outputs, as the reference described them on meta tensors) and the device's measured memory bandwidth.

Each input set of a config is made twice (by the judge's worker and the candidate's), its reference
computed in the task's dtype and in float64, the candidate's output read back and compared normwise and
elementwise: many passes over its bytes, most of them not at the device's peak bandwidth. A config whose
estimate passes a minute is announced before it starts; one past the session's limit
(`EvalOptions.config_time_limit_s`, `--config-time-limit`) is not checked: the smallest of its group
(which must run) stops the session with one line saying so, a larger one is skipped.

`benchmarks/check_time.py` measures the passes on a device (CHECK_PASSES is its figure for this device
kind); its table says what to set them to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cudasmith.errors import UsageError
from cudasmith.harness.correctness import config_bytes, input_sets, label
from cudasmith.harness.options import EvalOptions
from cudasmith.harness.verdict import SkippedConfig
from cudasmith.harness.wire.results import ConfigDescription
from cudasmith.tasks.problem import Config, Problem

# Effective passes over a config's bytes (inputs and outputs) per input set, at the device's measured
# bandwidth. CPU, a 2-core AMD EPYC under load (load average 6 to 14): benchmarks/check_time.py found 382
# passes at 256 MiB (20.6 s a set at 4.97 GB/s measured), and a 768 MiB config took 46 s a set at
# 10.9 GB/s (623): 500, within a factor of 1.3 of both. GPU: the CPU's figure until benchmarks/check_time.py
# measures one on a GPU (its checks run on the device, so fewer passes: an estimate that errs long).
CHECK_PASSES = {"cpu": 500.0, "cuda": 500.0}
# Where the device's bandwidth was never measured (`cudasmith device` does it), a low figure of its kind
# (a 2-core VM's memory; an entry-level GPU's), so that the estimate errs towards announcing.
UNMEASURED_GB_PER_S = {"cpu": 8.0, "cuda": 300.0}
# A config whose check is estimated to take longer than this is announced before it starts.
ANNOUNCE_S = 60.0


@dataclass(frozen=True)
class CheckEstimate:
    """A config's check, estimated: seconds in all, for its input sets at a bandwidth (measured or not)."""

    seconds: float
    config_bytes: float
    input_sets: int
    gb_per_s: float
    measured: bool

    def describe(self) -> str:
        """'about 9 min (1.3 GB in and out, 8 input sets at 10.9 GB/s measured)'."""
        minutes = self.seconds / 60
        when = f"about {minutes:.0f} min" if minutes >= 2 else f"about {self.seconds:.0f} s"
        rate = f"{self.gb_per_s:.3g} GB/s " + ("measured" if self.measured else "assumed: not measured yet")
        return f"{when} ({self.config_bytes / 1e9:.2g} GB in and out, {self.input_sets} input sets at {rate})"


def estimate(
    described: ConfigDescription, input_sets: int, kind: str, gb_per_s: float | None
) -> CheckEstimate | None:
    """The estimated check of one config on a device of `kind` ('cpu' or 'cuda') whose measured memory
    bandwidth is `gb_per_s` (None: not measured); None where the config's size is unknown."""
    if described.input_bytes is None:
        return None
    size = float(described.input_bytes + (described.output_bytes or 0))
    rate = gb_per_s if gb_per_s else UNMEASURED_GB_PER_S[kind]
    seconds = input_sets * CHECK_PASSES[kind] * size / (rate * 1e9)
    return CheckEstimate(seconds, size, input_sets, rate, gb_per_s is not None)


def within_time(
    problem: Problem,
    selected: list[tuple[int, Config, bool]],
    descriptions: list[ConfigDescription],
    options: EvalOptions,
    gb_per_s: float | None,
) -> tuple[list[tuple[int, Config, bool]], list[SkippedConfig], list[str]]:
    """The configs to check within the session's limit, those skipped as too large for the device, and
    what to announce (each config whose check is estimated past ANNOUNCE_S). A config past the limit
    that must run (the smallest of the public or hidden ones) is a UsageError naming the flag that
    raises the limit."""
    kind = "cuda" if options.on_gpu else "cpu"
    sets = input_sets(problem, options)
    smallest = {
        hidden: min((i for i, _, h in selected if h is hidden), key=lambda i: config_bytes(descriptions[i]))
        for hidden in {h for _, _, h in selected}
    }
    kept, skipped, announced = [], [], []
    limit = options.config_time_limit_s
    for index, config, hidden in selected:
        found = estimate(descriptions[index], sets, kind, gb_per_s)
        name = label(index, config, hidden, problem)
        if found is None or found.seconds <= limit:
            kept.append((index, config, hidden))
            if found is not None and found.seconds > ANNOUNCE_S:
                announced.append(f"{name}: checking it will take {found.describe()}")
            continue
        raise_to = f"--config-time-limit {math.ceil(found.seconds)}"
        if index == smallest[hidden]:
            raise UsageError(
                f"{name} is too large for this device: checking it would take {found.describe()}, past "
                f"the limit of {limit:g} s; {raise_to} judges it anyway"
            )
        shown = "hidden" if hidden else config
        why = f"too large for this device (checking it would take {found.describe()}; {raise_to} judges it)"
        skipped.append(SkippedConfig(index, shown, why))
    return kept, skipped, announced
