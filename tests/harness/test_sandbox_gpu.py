"""On a GPU: a confined worker starts CUDA and judges every kind of kernel correct under each mechanism,
its verdict naming the mechanism (test_sandbox.py judges the attack candidates on the GPU as well)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from cudasmith.harness.options import EvalOptions
from cudasmith.harness.session import Judge
from cudasmith.harness.walls import sandbox
from cudasmith.harness.wire.status import Status

from conftest import EXPLOITS, SOLUTIONS

pytestmark = pytest.mark.gpu
EXPLOIT_SOLUTIONS = EXPLOITS
# One session per task, each kind of kernel in it: NVRTC and load_inline (timed, so CUPTI runs confined
# too) add vectors; Triton and a CuPy RawKernel (where CuPy is installed) take a ReLU.
KERNELS = {
    "level1/vector_add": (SOLUTIONS / "vector_add_cuda.py", SOLUTIONS / "vector_add_load_inline.py"),
    "level1/relu": (EXPLOIT_SOLUTIONS / "gpu_honest_triton_relu.py", SOLUTIONS / "cupy_relu.py"),
}
TIMED_TASK = "level1/vector_add"


def _state(mechanism: str, scratch: Path) -> str:
    """What a worker confined by `mechanism` reports (a test is skipped where it is not available)."""
    state, _ = sandbox.setup_cost(mechanism, sandbox.make_policy(scratch, Path(sandbox.__file__), ()))
    if not sandbox.isolated(state):
        pytest.skip(state)
    return state


@pytest.mark.parametrize("mechanism", sandbox.MECHANISMS)
def test_cuda_starts_in_a_confined_process(mechanism: str, tmp_path: Path) -> None:
    """What every GPU worker does first: cuInit returns 0, not 304 (the driver refused an OS call)."""
    _state(mechanism, tmp_path)
    state, result = sandbox.cuda_start(mechanism, sandbox.make_policy(tmp_path, Path(sandbox.__file__), ()))
    assert result == sandbox.CUDA_SUCCESS, f"cuInit returned {result} under {state}"


@pytest.mark.parametrize("mechanism", sandbox.MECHANISMS)
@pytest.mark.parametrize("task", KERNELS)
def test_a_confined_worker_judges_each_kind_of_kernel_correct(
    task: str, mechanism: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = _state(mechanism, tmp_path)
    monkeypatch.setenv(sandbox.MECHANISMS_ENV, mechanism)
    solutions = [s for s in KERNELS[task] if s.name != "cupy_relu.py" or importlib.util.find_spec("cupy")]
    options = EvalOptions(
        device="cuda",
        seeds_per_config=1,
        baselines=("eager",),
        timing=task == TIMED_TASK,
        require_isolation=True,
    )
    with Judge(task=task, options=options, candidates=len(solutions)) as judge:
        verdicts = list(judge.judge_many(solutions))
    for solution, verdict in zip(solutions, verdicts, strict=True):
        assert verdict.status == Status.CORRECT, (solution.name, verdict.reason)
        assert verdict.isolation["filesystem"] == state, (solution.name, verdict.isolation)
        assert task != TIMED_TASK or verdict.speedup is not None, (solution.name, "not timed")
