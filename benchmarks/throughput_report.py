"""The records and the report of benchmarks/throughput.py: what each approach made of each candidate,
the summary per approach, the lines the issue asks for, and the Rich tables."""

from __future__ import annotations

import shutil
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

# Statuses of candidates that got no verdict: the budget ran out before them, they were left out (the
# hanging kernel under KernelBench), this script stopped them (its limits, not the judge's), or the
# approach is not available in this checkout.
UNJUDGED = ("not reached", "left out", "stopped", "unavailable")
# Captured output (the GPU machine's) is not a terminal: Rich would fold the tables to 80 columns.
WIDE_COLUMNS = 160


def fresh_caches(root: Path, device_facts: Path | None = None) -> dict[str, str]:
    """The variables that give a run empty compile caches of its own below `root` (cudasmith's, torch
    extensions', Triton's), so that every build is paid again even on a machine that ran it before.
    `device_facts`: a folder of the device's measured facts (cudasmith's cache's `device`) to keep, so
    that they are not measured again."""
    cache = root / "cudasmith-cache"
    if device_facts is not None and device_facts.is_dir():
        shutil.copytree(device_facts, cache / "device", dirs_exist_ok=True)
    return {
        "CUDASMITH_CACHE": str(cache),
        "TORCH_EXTENSIONS_DIR": str(root / "torch_extensions"),
        "TRITON_CACHE_DIR": str(root / "triton"),
    }


@dataclass(frozen=True)
class Candidate:
    """One solution of the batch: its file, task, expected status and how it builds its kernels."""

    name: str  # relative to the batch folder: level1/softmax/cuda_online.py
    path: Path
    task: str
    expected: str
    kind: str  # nvrtc | triton | load_inline | c | python


def kind_of(source: str) -> str:
    """How a solution builds its kernels: load_inline, triton, nvrtc, c or python."""
    if "load_inline(" in source:
        return "load_inline"
    if "import triton" in source:
        return "triton"
    if "compile_cuda(" in source:
        return "nvrtc"
    return "c" if "compile_c(" in source else "python"


@dataclass
class Result:
    """What one approach made of one candidate; status 'not reached' when the budget ran out first."""

    status: str
    seconds: float | None = None
    reason: str = ""
    speedup: float | None = None


@dataclass
class Approach:
    """One approach's run over the batch."""

    name: str
    results: dict[str, Result] = field(default_factory=dict)
    wall_s: float = 0.0
    busy_fraction: float | None = None
    setup_s: dict[str, float] = field(default_factory=dict)
    note: str = ""

    def judged(self) -> dict[str, Result]:
        """Candidates that got a verdict (not those the budget or a limit of this script cut short)."""
        return {n: r for n, r in self.results.items() if r.status not in UNJUDGED}

    def summary(self) -> dict[str, Any]:
        """Candidates judged, wall time, median seconds per candidate, candidates per GPU-minute, busy."""
        seconds = [r.seconds for r in self.judged().values() if r.seconds is not None]
        per_minute = len(seconds) / (self.wall_s / 60) if seconds and self.wall_s else None
        return {
            "judged": len(seconds),
            "wall_s": self.wall_s,
            "median_s": statistics.median(seconds) if seconds else None,
            "candidates_per_gpu_minute": per_minute,
            "busy_fraction": self.busy_fraction,
        }


def judge_errors(approaches: list[Approach], batch: list[Candidate]) -> list[str]:
    """Our judge calling a correct candidate wrong, or a wrong one correct."""
    errors = []
    for approach in (a for a in approaches if a.name in ("session", "oneshot")):
        for candidate in batch:
            result = approach.results[candidate.name]
            if result.status in UNJUDGED:
                continue
            if (candidate.expected == "correct") != (result.status == "correct"):
                errors.append(
                    f"{approach.name}: {candidate.name} expected {candidate.expected}, judged {result.status}"
                )
    return errors


def print_tables(batch: list[Candidate], approaches: list[Approach], document: dict[str, Any]) -> None:
    out = Console(highlight=False, width=None if sys.stdout.isatty() else WIDE_COLUMNS)
    per_candidate = Table(title="Per candidate: status and seconds", show_edge=False)
    for column in ("candidate", "kind", "expected"):
        per_candidate.add_column(column)
    for approach in approaches:
        per_candidate.add_column(approach.name)
        per_candidate.add_column("s", justify="right")
    for candidate in batch:
        cells = [candidate.name, candidate.kind, candidate.expected]
        for approach in approaches:
            result = approach.results[candidate.name]
            colour = "green" if result.status == candidate.expected else "yellow"
            if result.status not in UNJUDGED and (candidate.expected == "correct") != (
                result.status == "correct"
            ):
                colour = "red"
            cells += [
                f"[{colour}]{result.status}[/]",
                f"{result.seconds:.1f}" if result.seconds is not None else "–",
            ]
        per_candidate.add_row(*cells)
    out.print(per_candidate)
    summary = Table(title=f"Throughput on {document['versions']['device']}", show_edge=False)
    for column in ("approach", "judged", "wall s", "median s/candidate", "candidates/GPU-min", "GPU busy"):
        summary.add_column(column, justify="left" if column == "approach" else "right")
    for approach in approaches:
        s = approach.summary()

        def fmt(value: float | None, spec: str) -> str:
            return "–" if value is None else format(value, spec)

        summary.add_row(
            approach.name,
            str(s["judged"]),
            fmt(s["wall_s"], ".0f"),
            fmt(s["median_s"], ".2f"),
            fmt(s["candidates_per_gpu_minute"], ".2f"),
            fmt(s["busy_fraction"] and s["busy_fraction"] * 100, ".0f")
            + ("%" if s["busy_fraction"] is not None else ""),
        )
    out.print(summary)
    for line in document["lines"]:
        out.print(line)


def report_lines(batch: list[Candidate], approaches: list[Approach], document: dict[str, Any]) -> list[str]:
    """The figures the issue asks for, one line each, and what to know to read the tables."""
    lines = [f"GPU busy: {document['busy_fraction_measures']}."]
    facts = document.get("device_facts")
    if facts:
        failed = "" if facts["ok"] else f", FAILED: {facts['error']}"
        lines.append(
            f"device facts (cudasmith device, once per machine, in no approach): {facts['seconds']:.1f} s{failed}"
        )
    cold = document.get("cold_oneshot")
    if cold:
        lines.append(
            f"cold one-shot `cudasmith eval {cold['solution']} --task {cold['task']}`: {cold['seconds']:.1f} s, {cold['status']}"
        )
    hang = document.get("hang_oneshot")
    if hang:
        lines.append(
            f"hanging kernel, one-shot `cudasmith eval {hang['solution']} --task {hang['task']}` with default "
            f"limits: {hang['seconds']:.1f} s, {hang['status']}"
        )
    common = [c.name for c in batch if all(c.name in a.judged() for a in approaches)]
    if len(approaches) > 1 and common:
        medians = [
            (a.name, statistics.median(a.results[n].seconds or 0.0 for n in common)) for a in approaches
        ]
        text = ", ".join(f"{name} {median:.2f} s" for name, median in medians)
        lines.append(f"median s/candidate on the {len(common)} candidates every approach judged: {text}")
    rates = {a.name: a.summary() for a in approaches}
    if rates.get("session", {}).get("candidates_per_gpu_minute") and rates.get("kernelbench", {}).get(
        "candidates_per_gpu_minute"
    ):
        ratio = (
            rates["session"]["candidates_per_gpu_minute"] / rates["kernelbench"]["candidates_per_gpu_minute"]
        )
        lines.append(
            f"session vs KernelBench: {ratio:.2f}x the candidates per GPU-minute (session judged "
            f"{rates['session']['judged']}, KernelBench {rates['kernelbench']['judged']}; see 'left out')"
        )
    for candidate in (c for c in batch if c.expected == "timeout"):
        costs = [
            f"{a.name} {a.results[candidate.name].seconds or 0:.1f} s ({a.results[candidate.name].status})"
            for a in approaches
            if a.results[candidate.name].seconds is not None
        ]
        lines.append(f"hanging kernel {candidate.name} costs: {', '.join(costs) or 'not judged'}")
    for approach in approaches:
        accepted = [
            c.name for c in batch if c.expected != "correct" and approach.results[c.name].status == "correct"
        ]
        if accepted:
            lines.append(f"{approach.name} accepted {len(accepted)} wrong candidates: {', '.join(accepted)}")
        if approach.setup_s:
            lines.append(
                f"{approach.name} set-up per task: "
                + ", ".join(f"{t} {s:.1f} s" for t, s in approach.setup_s.items())
            )
        missed = [n for n, r in approach.results.items() if r.status == "not reached"]
        if missed:
            lines.append(
                f"{approach.name}: {len(missed)} candidates not reached within its share of the budget"
            )
        if approach.note:
            lines.append(f"{approach.name}: {approach.note}")
    lines += [f"note: {n}" for n in document["notes"]]
    lines += [f"JUDGE ERROR {e}" for e in document["judge_errors"]]
    return lines
