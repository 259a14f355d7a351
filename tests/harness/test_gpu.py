"""On a GPU: the CUDA and Triton examples come out correct, with a speedup over eager PyTorch."""

from __future__ import annotations

import importlib.util

import pytest

from cudasmith import evaluate

from conftest import EXAMPLES, SOLUTIONS

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("example", ["softmax_cuda.py", "softmax_triton.py"])
def test_gpu_examples_are_correct_and_timed(example: str) -> None:
    if example.endswith("triton.py") and importlib.util.find_spec("triton") is None:
        pytest.skip("Triton is not installed")
    # Eager PyTorch only: torch.compile baselines are test_timing_gpu.py's business (and take minutes).
    verdict = evaluate(EXAMPLES / example, task="level1/softmax", device="cuda", baselines=("eager",))
    assert verdict.status == "correct", verdict.reason
    assert verdict.speedup and verdict.speedup > 0, verdict.notes
    assert "H100" in verdict.device or "H200" in verdict.device or verdict.device
    for config in verdict.configs:
        assert config.time_ms > 0 and config.baseline_ms > 0
        print(f"{example} {config.config}: {config.time_ms:.4f} ms vs {config.baseline_ms:.4f} ms eager")
    print(f"{example}: {verdict.speedup:.2f}x geomean on {verdict.device}")


def test_cuda_runtime_error_is_recorded_and_the_worker_replaced() -> None:
    verdict = evaluate(
        SOLUTIONS / "cuda_illegal_address.py", task="level1/vector_add", device="cuda", timing=False
    )
    assert verdict.status == "runtime_error"
    assert "illegal" in verdict.reason.lower() or "died" in verdict.reason
    after = evaluate(EXAMPLES / "softmax_cuda.py", task="level1/softmax", device="cuda", timing=False)
    assert after.status == "correct", after.reason


def test_load_inline_solutions_work() -> None:
    verdict = evaluate(
        SOLUTIONS / "vector_add_load_inline.py", task="level1/vector_add", device="cuda", baselines=("eager",)
    )
    assert verdict.status == "correct", verdict.reason
    assert verdict.speedup is not None, verdict.notes  # None: no exclusive window (another process ran)
    print(f"load_inline vector_add: {verdict.speedup:.2f}x in {verdict.wall_s:.0f} s wall")
