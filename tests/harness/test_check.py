"""The comparison: calibrated tolerances catch downcasts and tiny-value tricks, pass reordered sums."""

from __future__ import annotations

import pytest
import torch

from cudasmith.harness.workers.check import all_finite, compare, compare_outputs, tolerance_for

FP32 = tolerance_for(torch.float32, {})


def _softmax_case(rows: int = 64, cols: int = 4096, spread: float = 3.0) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(rows, cols) * spread
    return torch.softmax(x, -1), torch.softmax(x.double(), -1)


def test_a_different_summation_order_passes() -> None:
    a, b = torch.randn(300, 700), torch.randn(700, 200)
    reference = a @ b
    # Same numbers summed in two halves: a different rounding, the same function.
    reordered = a[:, :350] @ b[:350] + a[:, 350:] @ b[350:]
    result = compare(reordered, reference, a.double() @ b.double(), FP32)
    assert result.ok, result.reason
    assert 0 < result.rel_err < 1e-6


def test_bf16_and_tf32_style_downcasts_fail_an_fp32_task() -> None:
    a, b = torch.randn(256, 512), torch.randn(512, 256)
    truth = a.double() @ b.double()
    bf16 = (a.bfloat16() @ b.bfloat16()).float()
    result = compare(bf16, a @ b, truth, FP32)
    assert not result.ok and "rel_err" in result.reason
    # TF32 keeps 10 mantissa bits: emulate by rounding the operands.
    tf32 = a.view(torch.int32).bitwise_and(~0x1FFF).view(torch.float32) @ b.view(torch.int32).bitwise_and(
        ~0x1FFF
    ).view(torch.float32)
    assert not compare(tf32, a @ b, truth, FP32).ok


def test_all_zeros_fails_a_wide_softmax_whose_values_are_tiny() -> None:
    reference, truth = _softmax_case(cols=50_000, spread=1.0)
    assert reference.abs().max() < 1e-2
    result = compare(torch.zeros_like(reference), reference, truth, FP32)
    assert not result.ok
    assert result.report and result.report.first


def test_nan_and_inf_positions_must_match() -> None:
    reference, truth = _softmax_case()
    broken = reference.clone()
    broken[3, 7] = float("nan")
    result = compare(broken, reference, truth, FP32)
    assert not result.ok and "expected finite, got NaN" in result.reason
    with_inf = torch.tensor([1.0, float("inf"), float("nan")])
    assert compare(with_inf.clone(), with_inf, with_inf.double(), FP32).ok
    assert not compare(torch.tensor([1.0, float("inf"), 0.0]), with_inf, with_inf.double(), FP32).ok


def test_integer_outputs_must_match_exactly() -> None:
    reference = torch.arange(10)
    wrong = reference.clone()
    wrong[4] = 0
    assert compare(reference.clone(), reference, None, FP32).ok
    result = compare(wrong, reference, None, FP32)
    assert not result.ok and "first at [4]" in result.reason


def test_a_problem_can_loosen_its_tolerance() -> None:
    reference, truth = _softmax_case()
    noisy = reference * (1 + 1e-4 * torch.randn_like(reference))
    assert not compare(noisy, reference, truth, FP32).ok
    loose = tolerance_for(torch.float32, {"float32": {"rtol": 1e-3, "atol": 1e-3, "norm": 1e-3}})
    assert compare(noisy, reference, truth, loose).ok


def test_output_lists_check_count_shape_and_dtype() -> None:
    x = torch.randn(4, 4)
    assert "2 outputs, expected 1" in compare_outputs([x, x], [x], None, {}).reason
    assert "shape [4], expected [4, 4]" in compare_outputs([x[0]], [x], None, {}).reason
    assert "dtype torch.float64" in compare_outputs([x.double()], [x], None, {}).reason
    assert compare_outputs([x.clone()], [x], [x.double()], {}).ok


def test_kernelbench_s_own_check_rides_along_with_ours() -> None:
    """KernelBench's allclose (atol = rtol = 1e-4 in float32, 1e-2 in half types) is reported beside our
    verdict: it agrees on copies and gross errors, and differs where the two rules differ."""
    reference = torch.randn(1000)
    truth = [reference.double()]
    assert compare_outputs([reference.clone()], [reference], truth, {}).kernelbench is True
    off = compare_outputs([reference + 5e-3], [reference], truth, {})
    assert not off.ok and off.kernelbench is False
    # A float16 answer off by 8e-3: outside our calibrated fp16 bound, inside KernelBench's 1e-2.
    half = reference.half()
    shifted = compare_outputs([half + 8e-3], [half], truth, {})
    assert not shifted.ok and shifted.kernelbench is True
    # NaN where the reference has NaN: the same answer for us, never equal for torch.allclose.
    with_nan = reference.clone()
    with_nan[3] = float("nan")
    both = compare_outputs([with_nan.clone()], [with_nan], [with_nan.double()], {})
    assert both.ok and both.kernelbench is False
    # The wrong shape fails both.
    assert compare_outputs([reference[:10]], [reference], truth, {}).kernelbench is False


@pytest.mark.parametrize(
    ("values", "finite"),
    [
        ([1.0, -2.0, 3.0], True),
        ([], True),
        ([1.0, float("nan")], False),
        ([float("inf"), 1.0], False),
        ([1.0, float("-inf")], False),
        ([float("inf"), float("-inf")], False),  # their sum is NaN
        ([1e308, 1e308, -5.0], True),  # finite values whose sum overflows: each is looked at
        ([-1e308, -1e308, float("nan")], False),
    ],
)
def test_all_finite_is_isfinite_all_however_the_sum_goes(values: list[float], finite: bool) -> None:
    tensor = torch.tensor(values, dtype=torch.float64)
    assert all_finite(tensor) is finite is bool(torch.isfinite(tensor).all())
    assert all_finite(tensor.to(torch.float32)) is bool(torch.isfinite(tensor.to(torch.float32)).all())
    as_complex = torch.complex(torch.zeros_like(tensor), tensor)  # the values in the imaginary part
    assert all_finite(as_complex) is finite
