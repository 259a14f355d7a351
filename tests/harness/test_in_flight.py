"""Several candidates in flight in one session, on the CPU: verdicts in the order given, each timed in a
window no other process of the session ran in (checked from /proc), whatever a candidate runs outside
its own calls; work a candidate runs beside its own timed calls gives it no speedup."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cudasmith import EvalOptions, Judge, Status, evaluate

from conftest import EXPLOITS, SOLUTIONS

# Every test here judges real candidates in sessions: tens of seconds to minutes each on two cores.
pytestmark = pytest.mark.slow

TASK = "level1/vector_add"
# Timing on (the windows are what is checked), one input set per config, eager PyTorch only.
TIMED = EvalOptions(device="cpu", seeds_per_config=1, baselines=("eager",), in_flight=2)
VECTOR_ADD = '''
import torch
from torch import nn

from cudasmith.runtime import compile_c

SOURCE = r"""
void vector_add(const float* a, const float* b, float* out, long n) {
    for (long i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
"""
vector_add = compile_c(SOURCE, "vector_add")


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        vector_add(a.contiguous(), b.contiguous(), out, a.numel())
        return out
'''
# A child process spins for the worker's whole life (a thread would be rejected at once, as a thread left
# running); the import then waits for the test's marker, so the spinning overlaps another candidate's timing.
SPINNER = f'''"""Interference: a process spinning outside the calls, for another candidate's timing windows."""
import os
import subprocess
import sys
import time

SPINNING = subprocess.Popen([sys.executable, "-c", "while True: pass"])
while not os.path.exists("MARKER"):
    time.sleep(0.05)
{VECTOR_ADD}'''
# A child process spinning beside the candidate's own timed calls (as one doing work for it would run).
HELPER_PROCESS = f'''"""Work beside its own timed calls, in a child process."""
import subprocess
import sys

HELPER = subprocess.Popen([sys.executable, "-c", "while True: pass"])
{VECTOR_ADD}'''


def test_candidates_in_flight_get_their_verdicts_in_order_each_timed_alone() -> None:
    paths = [SOLUTIONS / "vector_add_cpu.py", SOLUTIONS / "vector_add_misses_tail.py", SOLUTIONS / "segfaults.py",
             EXPLOITS / "honest_vector_add_unrolled.py"]  # fmt: skip
    with Judge(task=TASK, options=TIMED, candidates=len(paths)) as judge:
        verdicts = list(judge.judge_many(paths))
    assert [v.solution for v in verdicts] == [str(p) for p in paths]
    assert [v.status for v in verdicts] == [
        Status.CORRECT,
        Status.INCORRECT,
        Status.RUNTIME_ERROR,
        Status.CORRECT,
    ]
    for verdict in (verdicts[0], verdicts[3]):
        assert verdict.speedup is not None, verdict.notes
        timing = verdict.timing
        assert timing is not None
        assert timing.exclusive and timing.exclusive_verified, timing
        assert timing.windows >= 2 * len(verdict.configs)  # the candidate's and eager's, per config
        assert "/proc" in timing.exclusivity


def test_a_candidate_spinning_outside_its_calls_never_runs_in_another_candidates_window(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "go"
    spinner = tmp_path / "spinner.py"
    spinner.write_text(SPINNER.replace("MARKER", str(marker)))
    options = EvalOptions(**{**TIMED.__dict__, "screen": False})
    with Judge(task=TASK, options=options, candidates=2) as judge, ThreadPoolExecutor(1) as other:
        spinning = other.submit(judge.judge, spinner)
        honest = judge.judge(EXPLOITS / "honest_vector_add_unrolled.py")
        marker.touch()
        spun = spinning.result()
    assert honest.status == Status.CORRECT, honest.reason
    # Paused in every window: the check found nothing to time again.
    assert honest.timing.exclusive and honest.timing.exclusive_verified, honest.timing
    # Which process ran in a window is in the note that says it was timed again: the whole of it, not the
    # first note cut short (a CI run once found one window retimed and could not say by whom).
    assert honest.timing.retimed_windows == 0, [note for note in honest.notes if "timed again" in note]
    assert spun.status == Status.CORRECT, spun.reason  # its spinning slows only itself


def test_work_beside_a_candidates_own_timed_calls_gives_it_no_speedup(tmp_path: Path) -> None:
    solution = tmp_path / "helper_process.py"
    solution.write_text(HELPER_PROCESS)
    options = EvalOptions(**{**TIMED.__dict__, "screen": False, "in_flight": 1})
    verdict = evaluate(solution, task=TASK, options=options)
    assert verdict.status == Status.CORRECT, verdict.reason
    assert verdict.speedup is None and not verdict.timing.exclusive, verdict.timing
    assert verdict.timing.retimed_windows >= 2
    assert any("no speedup reported: another process ran" in note for note in verdict.notes), verdict.notes


def test_a_session_times_its_baselines_ahead_and_the_first_candidate_finds_them() -> None:
    """What a session does while its queue waits for builds (exec/ahead.py): peaks and baselines now, so the
    first candidate's timing holds only its own windows; its verdict has the same speedups as ever."""
    lines: list[str] = []
    with Judge(task=TASK, options=TIMED, candidates=1, progress=lambda what, *_: lines.append(what)) as judge:
        judge.time_ahead()
        ahead = [line for line in lines if line.startswith("timing eager PyTorch")]
        assert len(ahead) == len(judge.selected), lines
        lines.clear()
        holds = judge.lease.holds
        verdict = judge.judge(SOLUTIONS / "vector_add_cpu.py")
        # One hold for all of the candidate's configs (and one more only if a baseline beat the peaks).
        again = any("measured again" in note for note in verdict.notes)
        assert judge.lease.holds - holds == 1 + again, verdict.notes
    assert len(verdict.configs) > 1
    assert verdict.status == Status.CORRECT, verdict.reason
    assert not [line for line in lines if line.startswith("timing eager PyTorch")], lines
    assert all(result.speedup for result in verdict.configs) and verdict.speedups.get("eager"), (
        verdict.configs
    )
    assert verdict.timing is not None and verdict.timing.exclusive
