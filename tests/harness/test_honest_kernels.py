"""The honest GPU kernels a GPU bench judges (benchmarks/honest_kernels): in the suite's folder layout,
one per level1 task, and every kernel compiles with NVRTC (which needs no GPU)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from cudasmith.bench.layout import discover
from cudasmith.runtime.cuda import CudaKernel
from cudasmith.tasks.problem import load_module

from conftest import ROOT

FOLDER = ROOT / "benchmarks" / "honest_kernels"
HAS_NVRTC = importlib.util.find_spec("cuda.bindings") is not None


def test_the_folder_holds_one_kernel_for_each_of_seven_level1_tasks() -> None:
    found = discover(FOLDER)
    assert found.unmatched == []
    assert len(found.problems) == 7 and all(name.startswith("level1/") for name in found.problems)
    assert len(found.submissions) == 7


@pytest.mark.skipif(not HAS_NVRTC, reason="needs cuda-python (pip install 'cudasmith[cuda]')")
@pytest.mark.parametrize("solution", sorted(FOLDER.glob("level1/*/cuda.py")), ids=lambda p: p.parent.name)
def test_each_kernel_compiles(solution: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDASMITH_CUDA_ARCH", "sm_90a")
    module = load_module(solution, "honest")
    kernels = [value for value in vars(module).values() if isinstance(value, CudaKernel)]
    assert len(kernels) == 1 and kernels[0].cubin
