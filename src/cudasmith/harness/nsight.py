"""A few Nsight Compute metrics of a correct candidate's kernels, for the next prompt: DRAM and SM
throughput, achieved occupancy, L2 hit rate and the top warp-stall reasons.

ncu profiles a child process (workers/profiled.py) that calls the candidate's forward once between
cudaProfilerStart/Stop. It runs candidate code: it gets the workers' environment (no credentials) and its
own process group, killed whole at the deadline. What it reports only feeds a prompt, never a verdict.
Without a GPU or ncu, `profile` says why and does nothing.
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from cudasmith.device.launch_cost import NCU_UNITS_MS, find_ncu
from cudasmith.harness.walls.environment import SECRET_ENV

# The curated set: throughput of DRAM and of the SMs against their peaks, achieved occupancy, L2 hits.
CORE_METRICS = {
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "DRAM throughput",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "SM throughput",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved occupancy",
    "lts__t_sector_hit_rate.pct": "L2 hit rate",
    "gpu__time_duration.sum": "duration",
}
# Warp-stall reasons, as cycles per issued instruction (ncu's WarpStateStats section).
STALL_REASONS = (
    "barrier",
    "branch_resolving",
    "dispatch_stall",
    "drain",
    "imc_miss",
    "lg_throttle",
    "long_scoreboard",
    "math_pipe_throttle",
    "membar",
    "mio_throttle",
    "misc",
    "no_instruction",
    "not_selected",
    "short_scoreboard",
    "sleeping",
    "tex_throttle",
    "wait",
)
STALL_METRIC = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
TOP_STALLS = 3
# Profiling replays each kernel once per metric pass; a model's forward stays well within this.
NCU_PROFILE_TIMEOUT_S = 300.0


@dataclass
class NcuProfile:
    """Metrics of the kernels one forward call launched (time-weighted over kernels), or why none."""

    metrics: dict[str, float] = field(default_factory=dict)
    stalls: dict[str, float] = field(default_factory=dict)
    kernels: int = 0
    note: str = ""

    def describe(self) -> str:
        """One line for a prompt."""
        if not self.kernels:
            return f"Nsight Compute: no profile ({self.note})"
        parts = [
            f"{CORE_METRICS[k]} {v:.0f} %"
            for k, v in self.metrics.items()
            if k in CORE_METRICS and "pct" in k
        ]
        top = sorted(self.stalls.items(), key=lambda kv: -kv[1])[:TOP_STALLS]
        stalls = ", ".join(f"{name.replace('_', ' ')} {value:.1f}" for name, value in top)
        text = (
            f"Nsight Compute over {self.kernels} kernel launch{'es' if self.kernels > 1 else ''}: "
            + ", ".join(parts)
        )
        return text + (f"; top warp stalls (cycles per issued instruction): {stalls}" if stalls else "")


def parse_metrics(text: str) -> NcuProfile:
    """Per-kernel metric rows of `ncu --csv` combined, weighted by each kernel's duration."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return NcuProfile(note="ncu printed no metrics")
    kernels: dict[str, dict[str, float]] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        try:
            value = float(row["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
        if row["Metric Name"] == "gpu__time_duration.sum":
            value *= NCU_UNITS_MS.get(row.get("Metric Unit", "ns"), 1e-6)
        kernels.setdefault(row["ID"], {})[row["Metric Name"]] = value
    total = sum(k.get("gpu__time_duration.sum", 1.0) for k in kernels.values()) or 1.0
    profile = NcuProfile(kernels=len(kernels))
    for values in kernels.values():
        weight = values.get("gpu__time_duration.sum", 1.0) / total
        for name, value in values.items():
            if name in CORE_METRICS and name != "gpu__time_duration.sum":
                profile.metrics[name] = profile.metrics.get(name, 0.0) + weight * value
            for reason in STALL_REASONS:
                if name == STALL_METRIC.format(reason):
                    profile.stalls[reason] = profile.stalls.get(reason, 0.0) + weight * value
    return profile


def _run_ncu(ncu: str, metrics: list[str], program: list[str], timeout_s: float) -> tuple[str, str]:
    env = {k: v for k, v in os.environ.items() if not SECRET_ENV.search(k)}
    # The child imports cudasmith from wherever this process did (an uninstalled checkout included).
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    with tempfile.TemporaryDirectory() as directory:
        log = Path(directory) / "ncu.csv"
        command = [ncu, "--profile-from-start", "off", "--csv", "--metrics", ",".join(metrics)]
        command += ["--log-file", str(log), *program]
        child = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        try:
            output, _ = child.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            return "", f"ncu took longer than {timeout_s:.0f} s"
        return (log.read_text() if log.is_file() else ""), output.decode(errors="replace")[-300:]


def profile(
    solution: Path, problem_path: Path, config: dict, seed: int, timeout_s: float = NCU_PROFILE_TIMEOUT_S
) -> NcuProfile:
    """The curated metrics of one forward call of `solution` on one config, or a profile saying why not."""
    import torch

    ncu = find_ncu()
    if not torch.cuda.is_available():
        return NcuProfile(note="no GPU here")
    if ncu is None:
        return NcuProfile(note="Nsight Compute (ncu) is not installed here")
    program = [
        sys.executable,
        "-m",
        "cudasmith.harness.workers.profiled",
        str(solution),
        str(problem_path),
        json.dumps(config),
        str(seed),
    ]
    stalls = [STALL_METRIC.format(r) for r in STALL_REASONS]
    text, output = _run_ncu(ncu, [*CORE_METRICS, *stalls], program, timeout_s)
    found = parse_metrics(text)
    if not found.kernels:
        # An ncu that does not know one of the stall metrics refuses them all: try the core set alone.
        text, output = _run_ncu(ncu, list(CORE_METRICS), program, timeout_s)
        found = parse_metrics(text)
    if not found.kernels:
        found.note = f"ncu reported no kernels: {' '.join(output.split())[:200]}"
    return found
