"""Comparing a candidate's output with the reference: in the parent, on plain host tensors.

Errors are measured against the float64 reference, normwise and elementwise, with NaN/Inf positions
matched. Thresholds are the larger of a per-dtype floor and a multiple of the error that the
reference implementation itself makes in the task dtype, so a different summation order passes while
a downcast (bf16 or TF32 inside an fp32 task) does not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

from cudasmith.harness.wire.messages import Comparison
from cudasmith.harness.wire.results import Mismatch, WrongValue

# The candidate may be this many times less accurate than the reference implementation in the task dtype.
CALIBRATION_FACTOR = 10.0
# Per-dtype floors. rtol is relative to each element; atol is relative to the output's RMS (so that
# all-zero answers cannot pass because true values are tiny); norm bounds ‖c − r‖₂ / ‖r‖₂. Where the
# answer is zero up to round-off, rtol and norm are relative to the computation's scale instead.
DEFAULT_TOLERANCES: dict[str, dict[str, float]] = {
    "float64": {"rtol": 1e-7, "atol": 1e-9, "norm": 1e-10},
    "float32": {"rtol": 1e-4, "atol": 1e-5, "norm": 1e-5},
    "float16": {"rtol": 5e-3, "atol": 5e-3, "norm": 2e-3},
    "bfloat16": {"rtol": 3e-2, "atol": 3e-2, "norm": 1.6e-2},
}
# How many failing positions a mismatch report lists.
REPORT_POSITIONS = 5
# KernelBench's own correctness check (its eval.py), reported beside ours: every output cast to float32 and
# compared by torch.allclose with the reference model's output in the task dtype, atol = rtol = this value
# (float32: 1e-4; float16 and bfloat16: 1e-2; older KernelBench releases used 1e-2 for every dtype).
KERNELBENCH_TOLERANCE = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}


def all_finite(values: torch.Tensor) -> bool:
    """Whether every value is finite. Their sum is NaN or infinite wherever one of them is, so a finite sum
    answers in one cheap pass (on the CPU a twentieth of isfinite's); a sum that is not (a non-finite value,
    or finite values whose sum overflowed) has each value looked at."""
    return bool(torch.isfinite(values.sum())) or bool(torch.isfinite(values).all())


def tolerance_for(dtype: torch.dtype, overrides: dict[str, dict[str, float]]) -> dict[str, float]:
    """The thresholds for a dtype: the defaults, updated by a problem's TOLERANCE."""
    name = str(dtype).removeprefix("torch.")
    base = dict(DEFAULT_TOLERANCES.get(name, DEFAULT_TOLERANCES["float32"]))
    base.update(overrides.get(name, {}))
    return base


def _index(flat_index: int, shape: torch.Size) -> list[int]:
    position = []
    for size in reversed(shape):
        position.append(flat_index % size if size else 0)
        flat_index //= size if size else 1
    return list(reversed(position))


def _positions(mask: torch.Tensor, shape: torch.Size) -> list[list[int]]:
    flat = torch.nonzero(mask.reshape(-1)).reshape(-1)[:REPORT_POSITIONS]
    return [_index(int(i), shape) for i in flat]


def _special_class(t: torch.Tensor) -> torch.Tensor:
    """0 finite, 1 NaN, 2 +inf, 3 -inf."""
    cls = torch.zeros(t.shape, dtype=torch.int8, device=t.device)
    cls[torch.isnan(t)] = 1
    cls[t == float("inf")] = 2
    cls[t == float("-inf")] = 3
    return cls


def _value(element: torch.Tensor) -> float:
    """One element of an exactly compared output (integers, booleans) as a number a report carries."""
    return float(element.item())


def _compare_exact(candidate: torch.Tensor, reference: torch.Tensor) -> Comparison:
    wrong = candidate != reference
    count = int(wrong.sum())
    if count == 0:
        return Comparison(True, "exact match")
    where = _positions(wrong, reference.shape)
    first = [WrongValue(i, _value(reference[tuple(i)]), _value(candidate[tuple(i)])) for i in where]
    report = Mismatch(count, reference.numel(), first)
    return Comparison(
        False, f"{count} of {reference.numel()} values differ (first at {where[0]})", 1.0, 0, report
    )


def _compare_special(
    candidate: torch.Tensor, reference: torch.Tensor, truth: torch.Tensor, got: torch.Tensor
) -> Comparison | None:
    """NaN/Inf positions: each must be what the true value rounds to in the task dtype, or what the
    reference implementation itself produced there. None when they all agree."""
    expected_a = _special_class(truth.to(reference.dtype))
    expected_b = _special_class(reference)
    got_class = _special_class(candidate)
    special_wrong = (got_class != expected_a) & (got_class != expected_b)
    if not special_wrong.any():
        return None
    count = int(special_wrong.sum())
    where = _positions(special_wrong, reference.shape)
    names = {0: "finite", 1: "NaN", 2: "+inf", 3: "-inf"}
    first = tuple(where[0])
    report = Mismatch(
        count,
        reference.numel(),
        [WrongValue(i) for i in where],
        got_nan=int(torch.isnan(got).sum()),
        expected_nan=int(torch.isnan(truth).sum()),
        got_inf=int(torch.isinf(got).sum()),
        expected_inf=int(torch.isinf(truth).sum()),
    )
    return Comparison(
        False,
        f"{count} positions are NaN/Inf where the reference is not, or the reverse "
        f"(first at {list(first)}: expected {names[int(expected_a[first])]}, got {names[int(got_class[first])]})",
        float("inf"),
        float("inf"),
        report,
    )


def compare(
    candidate: torch.Tensor,
    reference: torch.Tensor,
    reference64: torch.Tensor | None,
    tolerance: dict[str, float],
    scale: float | None = None,
) -> Comparison:
    """Compare one output; shapes and dtypes must already match. `scale`, given where the answer is zero up
    to round-off, is the RMS of the values the computation went through: errors are relative to it."""
    if not (reference.is_floating_point() or reference.is_complex()):
        return _compare_exact(candidate, reference)
    truth = (reference64 if reference64 is not None else reference).to(torch.float64)
    got = candidate.to(torch.float64)
    own = reference.to(torch.float64)
    finite: torch.Tensor | None = None
    if all_finite(truth) and all_finite(got) and all_finite(own):
        truth_f, got_f, own_f = truth.reshape(-1), got.reshape(-1), own.reshape(-1)
    else:
        special = _compare_special(candidate, reference, truth, got)
        if special is not None:
            return special
        finite = torch.isfinite(truth) & torch.isfinite(got) & torch.isfinite(own)
        truth_f, got_f, own_f = truth[finite], got[finite], own[finite]
    if truth_f.numel() == 0:
        return Comparison(True, "no finite values to compare; NaN/Inf positions match")
    diff = got_f.sub(truth_f).abs_()
    own_err = own_f.sub(truth_f).abs_()
    norm_truth = float(torch.linalg.vector_norm(truth_f))
    rms = norm_truth / truth_f.numel() ** 0.5
    zero_answer = scale is not None and scale > rms
    # An answer that is zero up to round-off: errors relative to the values the computation went through.
    denominator = scale * truth_f.numel() ** 0.5 if zero_answer else norm_truth if norm_truth > 0 else 1.0
    rel_err = float(torch.linalg.vector_norm(diff)) / denominator
    own_rel_err = float(torch.linalg.vector_norm(own_err)) / denominator
    max_abs = float(diff.max())
    allowed = truth_f.abs().mul_(tolerance["rtol"]).add_(tolerance["atol"] * rms)
    if zero_answer:
        assert scale is not None  # zero_answer says so
        allowed.clamp_(min=tolerance["rtol"] * scale)
    torch.maximum(allowed, own_err.mul_(CALIBRATION_FACTOR), out=allowed)
    norm_allowed = max(tolerance["norm"], CALIBRATION_FACTOR * own_rel_err)
    elem_wrong = diff > allowed
    if not elem_wrong.any() and rel_err <= norm_allowed:
        reason = f"rel_err {rel_err:.2e} within {norm_allowed:.1e}"
        if zero_answer:
            reason += f" (the answer is zero up to round-off: errors relative to the computation's scale {scale:.2g})"
        return Comparison(True, reason, rel_err, max_abs)
    if finite is None:
        full_wrong = elem_wrong.reshape(reference.shape)
    else:
        full_wrong = torch.zeros(reference.shape, dtype=torch.bool, device=reference.device)
        full_wrong[finite] = elem_wrong
    where = _positions(full_wrong, reference.shape)
    worst = int(torch.argmax(diff / allowed.clamp_min(torch.finfo(torch.float64).tiny)))
    report = Mismatch(
        int(elem_wrong.sum()),
        reference.numel(),
        [WrongValue(i, truth[tuple(i)].item(), got[tuple(i)].item()) for i in where],
        rel_err=rel_err,
        rel_err_allowed=norm_allowed,
        reference_own_rel_err=own_rel_err,
        max_abs_err=max_abs,
        worst=WrongValue([], truth_f[worst].item(), got_f[worst].item(), allowed[worst].item()),
    )
    if elem_wrong.any():
        i = where[0]
        reason = (
            f"{int(elem_wrong.sum())} of {reference.numel()} values differ (first at {i}: "
            f"expected {truth[tuple(i)].item():.6g}, got {got[tuple(i)].item():.6g}); rel_err {rel_err:.2e}"
        )
    else:
        reason = f"rel_err {rel_err:.2e} exceeds {norm_allowed:.1e} (reference's own error {own_rel_err:.1e})"
    return Comparison(False, reason, rel_err, max_abs, report)


def _structure(candidate: list[torch.Tensor], reference: list[torch.Tensor]) -> Comparison | None:
    """Count, shapes and dtypes; None when they all match."""
    if len(candidate) != len(reference):
        return Comparison(
            False, f"returned {len(candidate)} outputs, expected {len(reference)}", float("inf")
        )
    for index, (got, expected) in enumerate(zip(candidate, reference, strict=True)):
        label = f"output {index}: " if len(reference) > 1 else ""
        if got.shape != expected.shape:
            return Comparison(
                False, f"{label}shape {list(got.shape)}, expected {list(expected.shape)}", float("inf")
            )
        if got.dtype != expected.dtype:
            return Comparison(False, f"{label}dtype {got.dtype}, expected {expected.dtype}", float("inf"))
    return None


def kernelbench_allclose(candidate: list[torch.Tensor], reference: list[torch.Tensor]) -> bool:
    """KernelBench's verdict on one call: as many outputs, each of the reference's shape and dtype, and
    allclose in float32 at its per-dtype tolerance (NaN never equals NaN there)."""
    if _structure(candidate, reference) is not None:
        return False
    for got, expected in zip(candidate, reference, strict=True):
        tolerance = KERNELBENCH_TOLERANCE.get(str(expected.dtype).removeprefix("torch."), 1e-4)
        if not torch.allclose(
            got.to(torch.float32), expected.to(torch.float32), atol=tolerance, rtol=tolerance
        ):
            return False
    return True


def compare_outputs(
    candidate: list[torch.Tensor],
    reference: list[torch.Tensor],
    reference64: list[torch.Tensor] | None,
    overrides: dict[str, dict[str, float]],
    scale: float | None = None,
    kernelbench: bool = True,
) -> Comparison:
    """Compare every output of a call; the first failing one decides (`scale` as in compare). KernelBench's
    own check of the same outputs rides along (Comparison.kernelbench), unless `kernelbench` is False (a
    timed call's re-check, which only asks whether the outputs match)."""
    comparison = _structure(candidate, reference)
    if comparison is None:
        comparison = Comparison(True, "match")  # the worst match so far, until an output fails
        for index, (got, expected) in enumerate(zip(candidate, reference, strict=True)):
            label = f"output {index}: " if len(reference) > 1 else ""
            expected64 = None if reference64 is None else reference64[index]
            result = compare(got, expected, expected64, tolerance_for(expected.dtype, overrides), scale)
            if not result.ok:
                comparison = replace(result, reason=label + result.reason)
                break
            if result.rel_err >= comparison.rel_err:
                worst_abs = max(comparison.max_abs_err, result.max_abs_err)
                comparison = Comparison(True, label + result.reason, result.rel_err, worst_abs)
    if not kernelbench:
        return comparison
    return replace(comparison, kernelbench=kernelbench_allclose(candidate, reference))


def validate_outputs(
    candidate: list[torch.Tensor],
    reference: list[torch.Tensor],
    validate: Callable[..., str | None],
    inputs: list[Any],
) -> Comparison:
    """A problem's own judgement of one call, `validate(inputs, output, reference)`, after count, shape and
    dtype checks (compare_outputs judges the calls of a problem without one)."""
    wrong_structure = _structure(candidate, reference)
    if wrong_structure is not None:
        return wrong_structure
    unpack = (lambda values: values[0]) if len(reference) == 1 else tuple
    problem_says = validate(inputs, unpack(candidate), unpack(reference))
    if problem_says is None:
        return Comparison(True, "accepted by the problem's validator")
    return Comparison(False, f"the problem's validator: {problem_says}", float("inf"))
