"""On a GPU: a CuPy RawKernel is the solution's own kernel; cuBLAS through CuPy's matmul is not."""

from __future__ import annotations

import importlib.util

import pytest

from cudasmith import evaluate

from conftest import SOLUTIONS

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(importlib.util.find_spec("cupy") is None, reason="CuPy is not installed"),
]
OPTIONS = {"device": "cuda", "seeds_per_config": 1, "baselines": ("eager",)}


def test_a_cupy_raw_kernel_is_the_solutions_own() -> None:
    verdict = evaluate(SOLUTIONS / "cupy_relu.py", task="level1/relu", **OPTIONS)
    assert verdict.status == "correct", verdict.reason
    assert verdict.own_share is not None and verdict.own_share > 0.5


def test_cublas_through_cupy_is_refused_on_a_single_operator_task() -> None:
    verdict = evaluate(SOLUTIONS / "cupy_matmul.py", task="level1/matmul", **{**OPTIONS, "timing": False})
    assert verdict.status == "rejected" and "not the solution's own" in verdict.reason, verdict.reason
