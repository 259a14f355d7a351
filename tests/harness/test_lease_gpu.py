"""On a GPU: candidates in flight share the GPU while each is timed alone, and NVML's per-process samples
say so; a candidate that launches GPU work outside its calls never reaches another candidate's window,
and GPU work beside its own timed calls, in another process, gives it no speedup.

    pytest -q tests/harness/test_lease_gpu.py        # about 2 minutes on an H100
"""

from __future__ import annotations

import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cudasmith import EvalOptions, Judge, Status, evaluate
from cudasmith.harness.walls import sandbox

from conftest import SOLUTIONS

pytestmark = pytest.mark.gpu

TASK = "level1/vector_add"
TIMED = EvalOptions(device="cuda", seeds_per_config=1, baselines=("eager",), in_flight=2)
VECTOR_ADD = (SOLUTIONS / "vector_add_cuda.py").read_text()
# A raw thread (no check sees it) launching kernels for the worker's whole life; the import then waits
# for the test's marker, so its launches overlap another candidate's timing.
LAUNCHER = f'''"""Interference: a thread launching GPU work outside the calls, for another candidate's windows."""
import _thread
import os
import time

import torch

def _launch():
    x = torch.ones(1 << 22, device="cuda")
    while True:
        x.mul_(1.0)

_thread.start_new_thread(_launch, ())
while not os.path.exists("MARKER"):
    time.sleep(0.05)
{VECTOR_ADD}'''
# A child process with a CUDA context of its own, busy on the GPU beside the candidate's timed calls; the
# import waits until it is.
HELPER_PROCESS = f'''"""GPU work beside its own timed calls, in a child process."""
import os
import subprocess
import sys
import time

BUSY = (
    "import pathlib, sys, torch\\nx = torch.ones(1 << 22, device='cuda')\\nx.mul_(1.0)\\n"
    "pathlib.Path(sys.argv[1]).touch()\\nwhile True:\\n    x.mul_(1.0)\\n"
)
HELPER = subprocess.Popen([sys.executable, "-c", BUSY, "READY"])
while not os.path.exists("READY"):
    time.sleep(0.05)
{VECTOR_ADD}'''


def _nvml() -> None:
    pytest.importorskip(
        "pynvml", reason="windows are verified by NVML's per-process samples (pip install nvidia-ml-py)"
    )


def test_candidates_in_flight_are_each_timed_alone_as_nvml_verifies() -> None:
    _nvml()
    paths = [SOLUTIONS / "vector_add_cuda.py", SOLUTIONS / "vector_add_side_stream_joined.py"] * 2
    with Judge(task=TASK, options=TIMED, candidates=len(paths)) as judge:
        verdicts = list(judge.judge_many(paths))
    for verdict in verdicts:
        assert verdict.status == Status.CORRECT, verdict.reason
        assert verdict.speedup is not None, verdict.notes
        assert verdict.timing.exclusive and verdict.timing.exclusive_verified, verdict.timing
        assert "NVML" in verdict.timing.exclusivity
        print(f"{Path(verdict.solution).name}: {verdict.speedup:.2f}x, {verdict.timing.windows} windows, "
              f"{verdict.timing.retimed_windows} timed again, {verdict.wall_s:.1f} s")  # fmt: skip


def test_a_candidate_launching_gpu_work_outside_its_calls_never_reaches_another_candidates_window(
    tmp_path: Path,
) -> None:
    _nvml()
    marker = tmp_path / "go"
    launcher = tmp_path / "launcher.py"
    launcher.write_text(LAUNCHER.replace("MARKER", str(marker)))
    options = EvalOptions(**{**TIMED.__dict__, "screen": False})
    with Judge(task=TASK, options=options, candidates=2) as judge, ThreadPoolExecutor(1) as other:
        launching = other.submit(judge.judge, launcher)
        honest = judge.judge(SOLUTIONS / "vector_add_cuda.py")
        marker.touch()
        launching.result()
    assert honest.status == Status.CORRECT, honest.reason
    assert honest.timing.exclusive and honest.timing.exclusive_verified, honest.timing
    print(f"honest beside a launcher: {honest.timing.retimed_windows} windows timed again, {honest.notes}")


def test_gpu_work_beside_a_candidates_own_timed_calls_gives_it_no_speedup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _nvml()
    # Confined, the child cannot start CUDA at all (cuInit answers 304) nor write the marker outside its
    # scratch, so the import would wait for ever: the lease's own check is what this test is about, and it
    # must hold where no sandbox does.
    monkeypatch.setenv(sandbox.MECHANISMS_ENV, "none")
    solution = tmp_path / "helper_process.py"
    solution.write_text(HELPER_PROCESS.replace("READY", str(tmp_path / "helper_ready")))
    options = EvalOptions(**{**TIMED.__dict__, "screen": False, "in_flight": 1})
    verdict = evaluate(solution, task=TASK, options=options)
    assert verdict.status == Status.CORRECT, verdict.reason
    assert verdict.speedup is None and not verdict.timing.exclusive, verdict.timing
    assert any("no speedup reported: another process ran" in note for note in verdict.notes), verdict.notes


def test_a_session_opened_beside_another_makes_its_cuda_contexts_between_the_others_windows(
    tmp_path: Path,
) -> None:
    """A second session opens while the first times its candidates: its judge's and baseline workers make
    their imports and describe the configs beside the first's windows, and their CUDA contexts inside a
    step of the shared lease, so no window of the first is shared with them (NVML would see it) or timed
    again for them."""
    _nvml()
    paths = []
    for index in range(4):
        paths.append(tmp_path / f"vector_add_{index}.py")
        shutil.copy(SOLUTIONS / "vector_add_cuda.py", paths[-1])
    with Judge(task=TASK, options=TIMED, candidates=len(paths)) as first, ThreadPoolExecutor(1) as other:
        judging = other.submit(lambda: list(first.judge_many(paths)))
        while not first.lease.holds and not judging.done():  # until the first session times
            time.sleep(0.05)
        with Judge(task="level1/relu", options=TIMED, candidates=1) as second:
            assert second.lease is first.lease
            assert second._started and second.oracle._loaded is not None, (
                "started, in a step, before it returns"
            )
        verdicts = judging.result()
    for verdict in verdicts:
        assert verdict.status == Status.CORRECT, verdict.reason
        assert verdict.timing.exclusive and verdict.timing.exclusive_verified, verdict.timing
    retimed = [note for verdict in verdicts for note in verdict.notes if "timed again" in note]
    assert not retimed, retimed
