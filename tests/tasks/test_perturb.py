"""Perturbing timed calls' inputs: half the normal values move a little, nothing else does, the same seed
undoes it, and the compiled pass and the PyTorch fallback give the same bits."""

from __future__ import annotations

import pytest
import torch

from cudasmith.tasks import perturb
from cudasmith.tasks.perturb import FLOAT_BITS, perturb_inputs


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.contiguous().reshape(-1).view(torch.uint8).clone()


def _inputs() -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(7)
    values = [torch.randn(10_007, generator=generator, dtype=torch.float64).to(dtype) for dtype in FLOAT_BITS]
    values[1][:4] = torch.tensor([0.0, float("inf"), float("nan"), 1e-40])  # zero, inf, NaN, a subnormal
    return [*values, torch.arange(5)]


@pytest.mark.parametrize("compiled", [False, True], ids=["pytorch", "compiled"])
def test_half_the_normal_values_move_slightly_and_the_same_seed_restores_them(
    compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if compiled and not perturb.prepare("cpu"):
        pytest.skip("no C compiler here")
    if not compiled:
        monkeypatch.setattr(perturb, "_cpu_kernel", None)
    inputs = _inputs()
    before = [t.clone() for t in inputs]
    perturb_inputs(inputs, 1234)
    for now, was in zip(inputs[:4], before[:4], strict=True):
        moved = (now != was) & torch.isfinite(was)
        assert 0.45 < moved.double().mean() < 0.55
        relative = ((now.double() - was.double()).abs() / was.double().abs())[moved]
        assert relative.max() < 0.13 and (torch.sign(now) == torch.sign(was)).all()
    assert torch.equal(_bits(inputs[1][:4]), _bits(before[1][:4]))  # special values untouched
    assert torch.equal(inputs[-1], before[-1])  # integers untouched
    perturb_inputs(inputs, 1234)
    assert all(torch.equal(_bits(a), _bits(b)) for a, b in zip(inputs, before, strict=True))


def test_the_compiled_pass_and_the_fallback_agree_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    if not perturb.prepare("cpu"):
        pytest.skip("no C compiler here")
    compiled, fallback = _inputs(), _inputs()
    perturb_inputs(compiled, 99)
    monkeypatch.setattr(perturb, "_cpu_kernel", None)
    perturb_inputs(fallback, 99)
    assert all(torch.equal(_bits(a), _bits(b)) for a, b in zip(compiled, fallback, strict=True))
    other = _inputs()
    perturb_inputs(other, 100)
    assert not torch.equal(_bits(other[0]), _bits(fallback[0]))  # another seed, other flips
