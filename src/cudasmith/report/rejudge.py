"""Re-judging a run another judge scored (a KernelBench run): which of its "correct" kernels hold up.

Each kernel answers three questions: is it correct on every valid input (drawn inputs and parameters,
hidden shapes; a cheat fails here or is caught by a defence, under any rules); is its time honest, and
what is its speedup against the baseline timed beside it; and is it a custom kernel (the solution's
own share of the time, the PyTorch operators it ran)? The summary counts, of the kernels the run
called correct, those that hold up as custom kernels (alone, or with PyTorch doing part of the work), those
that are PyTorch rewrites (allowed by KernelBench's rules, refused by strict ones) and those that are wrong
or cheating, by rule.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from rich.console import Console
from rich.markup import escape

from cudasmith.harness.verdict import Verdict
from cudasmith.jsontypes import JsonDict
from cudasmith.report.formats import plain_table, titled
from cudasmith.store import CandidateRecord
from cudasmith.store.integrity import TAMPERED_REASON
from cudasmith.store.metrics import speedup_of
from cudasmith.store.rules import rule_broken

# Shares of a correct kernel's timed GPU time (CPU time on the CPU) in the solution's own kernels: at least
# CUSTOM_MIN_SHARE, a custom kernel; at least MIXED_MIN_SHARE, a custom kernel with PyTorch (or a library)
# doing part of the work (a fused epilogue after cuBLAS's GEMM); below, a rewrite in PyTorch or a library.
CUSTOM_MIN_SHARE = 0.9
MIXED_MIN_SHARE = 0.05
CUSTOM = "custom kernel"
MIXED = "custom kernel + PyTorch"
REWRITE = "PyTorch rewrite"
# A KernelBench run names its kernels by task and sample; a folder of the suite's layout, by file.
KERNELBENCH_LAYOUT = "kernelbench"
# Columns of free text, which wrap in a terminal too narrow for the table (elsewhere nothing wraps).
WRAPPING_COLUMNS = ("task", "verdict", "PyTorch ops")
# PyTorch operators named per kernel in the table, at most.
SHOWN_OPS = 3


def kind_of(verdict: Verdict) -> str:
    """What a verdict makes of a kernel: CUSTOM, MIXED, REWRITE, or what it failed with ('incorrect',
    'rejected: caching', 'timeout'…). Untimed, a kernel that ran no PyTorch compute counts as custom."""
    if not verdict.correct:
        rule = rule_broken(verdict)
        return f"rejected: {rule}" if rule else verdict.status.value
    share = verdict.own_share
    if not isinstance(share, int | float):
        return REWRITE if verdict.torch_ops else CUSTOM
    if share >= CUSTOM_MIN_SHARE:
        return CUSTOM
    return MIXED if share >= MIXED_MIN_SHARE else REWRITE


@dataclass(frozen=True)
class RejudgedKernel:
    """One kernel of the run: what the run claimed of it and what the judge says now."""

    task: str
    sample: int
    file: str
    claimed_correct: bool | None
    claimed_speedup: float | None
    status: str
    kind: str
    speedup: float | None
    own_share: float | None
    torch_ops: dict[str, int]
    rules: str
    reason: str
    # KernelBench's own tolerance check on the outputs compared (Verdict.kernelbench_tolerance).
    kernelbench_tolerance: bool | None = None


@dataclass
class RejudgeSummary:
    """Of the kernels the run called correct (every kernel when it claimed nothing): how many hold up as
    custom kernels, how many are PyTorch rewrites, and what became of the others."""

    rules: str
    claimed_correct: int | None
    custom_kernels: int
    custom_with_pytorch: int
    pytorch_rewrites: int
    wrong_or_cheating: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> JsonDict:
        """The JSON form."""
        return asdict(self)


def rejudged(candidates: list[CandidateRecord]) -> list[RejudgedKernel]:
    """The judged kernels of a bench run, in its order."""
    kernels = []
    for candidate in candidates:
        verdict = candidate.verdict
        if candidate.status is None:
            continue
        meta = candidate.meta
        kernels.append(
            RejudgedKernel(
                task=str(meta.get("task")),
                sample=int(meta.get("sample") or 0),
                file=Path(candidate.path or candidate.key).name,
                claimed_correct=meta.get("claimed_correct"),
                claimed_speedup=meta.get("claimed_speedup"),
                status=candidate.status,
                kind=candidate.status if verdict is None else kind_of(verdict),
                speedup=speedup_of(verdict),
                own_share=None if verdict is None else verdict.own_share,
                torch_ops={} if verdict is None else dict(verdict.torch_ops),
                rules="strict" if verdict is None else verdict.rules,
                reason=TAMPERED_REASON if verdict is None else verdict.reason,
                kernelbench_tolerance=None if verdict is None else verdict.kernelbench_tolerance,
            )
        )
    return kernels


def summarize_rejudge(kernels: list[RejudgedKernel]) -> RejudgeSummary:
    """The counts of the summary, over the kernels the run called correct (all when it claimed nothing)."""
    any_claims = any(k.claimed_correct is not None for k in kernels)
    counted = [k for k in kernels if k.claimed_correct] if any_claims else kernels
    kinds = Counter(k.kind for k in counted)
    return RejudgeSummary(
        rules=", ".join(sorted({k.rules for k in kernels})) or "strict",
        claimed_correct=len(counted) if any_claims else None,
        custom_kernels=kinds.pop(CUSTOM, 0),
        custom_with_pytorch=kinds.pop(MIXED, 0),
        pytorch_rewrites=kinds.pop(REWRITE, 0),
        wrong_or_cheating=dict(kinds.most_common()),
    )


def _times(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}×"


def _claim(value: bool | None) -> str:
    return "–" if value is None else ("correct" if value else "incorrect")


def _kernelbench(value: bool | None) -> str:
    return "–" if value is None else ("within tolerance" if value else "outside tolerance")


def _ops(ops: dict[str, int]) -> str:
    names = [name.removeprefix("aten::") for name, _ in Counter(ops).most_common(SHOWN_OPS)]
    more = f" +{len(ops) - SHOWN_OPS}" if len(ops) > SHOWN_OPS else ""
    return ", ".join(names) + more if names else "–"


def _columns(kernels: list[RejudgedKernel], layout: str) -> list[tuple[str, Callable[[RejudgedKernel], str]]]:
    """The table's columns: the kernel named by its sample (KernelBench) or its file (a folder), the
    run's claims where it made any, then what the judge says."""
    named: tuple[str, Callable[[RejudgedKernel], str]] = (
        ("sample", lambda k: str(k.sample)) if layout == KERNELBENCH_LAYOUT else ("file", lambda k: k.file)
    )
    columns: list[tuple[str, Callable[[RejudgedKernel], str]]] = [("task", lambda k: k.task), named]
    if any(k.claimed_correct is not None or k.claimed_speedup is not None for k in kernels):
        columns += [
            ("claimed", lambda k: _claim(k.claimed_correct)),
            ("claimed speedup", lambda k: _times(k.claimed_speedup)),
        ]
    columns.append(("verdict", lambda k: k.kind))
    if any(k.kernelbench_tolerance is not None for k in kernels):
        columns.append(("KernelBench check", lambda k: _kernelbench(k.kernelbench_tolerance)))
    columns += [
        ("speedup", lambda k: _times(k.speedup)),
        ("own share", lambda k: "–" if k.own_share is None else f"{100 * k.own_share:.0f} %"),
        ("PyTorch ops", lambda k: _ops(k.torch_ops)),
    ]
    return columns


def print_rejudge(kernels: list[RejudgedKernel], console: Console, layout: str = KERNELBENCH_LAYOUT) -> None:
    """The kernels with the run's claims (where it made any) beside the judge's answers, then the
    summary's counts. `layout`: the folder's (bench/layout.py), which says how a kernel is named."""
    if not kernels:
        return
    summary = summarize_rejudge(kernels)
    judged = "Re-judged" if layout == KERNELBENCH_LAYOUT else "Judged"
    table = plain_table()
    columns = _columns(kernels, layout)
    for name, _ in columns:
        justify: Literal["left", "right"] = "right" if "speedup" in name or "share" in name else "left"
        table.add_column(name, no_wrap=name not in WRAPPING_COLUMNS, overflow="fold", justify=justify)
    for kernel in kernels:
        table.add_row(*(escape(cell(kernel)) for _, cell in columns))
    console.print(titled(f"{judged} under {summary.rules} rules", table))
    of = "called correct by the run" if summary.claimed_correct is not None else "judged"
    total = summary.claimed_correct if summary.claimed_correct is not None else len(kernels)
    fell = sum(summary.wrong_or_cheating.values())
    console.print(
        f"Of {total} kernels {of}: custom kernels that hold up {summary.custom_kernels}, custom kernels with "
        f"PyTorch doing part of the work {summary.custom_with_pytorch}, PyTorch rewrites "
        f"{summary.pytorch_rewrites} (KernelBench's rules allow them, strict rules refuse them), wrong or "
        f"cheating {fell}",
        highlight=False,
    )
    for what, count in summary.wrong_or_cheating.items():
        console.print(f"  {count} {what}", highlight=False)
    passed = [k for k in kernels if k.kernelbench_tolerance and k.status != "correct"]
    if passed:
        console.print(
            f"{len(passed)} of the kernels judged otherwise {'is' if len(passed) == 1 else 'are'} within "
            "KernelBench's own tolerance on the inputs compared (its check alone would have accepted "
            f"{'it' if len(passed) == 1 else 'them'} there)",
            highlight=False,
        )
