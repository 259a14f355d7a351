"""Judge sessions on the CPU: many candidates against one task, each still isolated; limits from the task;
speedups against baselines timed in the session, whatever an earlier session left on disk."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import cudasmith
from cudasmith import EvalOptions, Judge, Status, Verdict
from cudasmith.errors import UsageError
from cudasmith.harness.baselines import BASELINE_PURPOSE
from cudasmith.harness.lease import TimingLease
from cudasmith.runtime import seal

from conftest import EXPLOITS, PROBLEMS, ROOT, SOLUTIONS, run_cli

QUICK = EvalOptions(device="cpu", seeds_per_config=1, timing=False)


@pytest.mark.slow
def test_a_session_judges_several_candidates_in_order_each_in_its_own_process() -> None:
    paths = [SOLUTIONS / "vector_add_cpu.py", SOLUTIONS / "vector_add_misses_tail.py", SOLUTIONS / "segfaults.py",
             EXPLOITS / "honest_vector_add_unrolled.py"]  # fmt: skip
    with Judge(task="level1/vector_add", options=QUICK, candidates=len(paths)) as judge:
        verdicts = list(judge.judge_many(paths))
    assert [v.solution for v in verdicts] == [str(p) for p in paths]
    assert [v.status for v in verdicts] == [
        Status.CORRECT,
        Status.INCORRECT,
        Status.RUNTIME_ERROR,
        Status.CORRECT,
    ]
    assert len({v.seed for v in verdicts}) == 1  # one session, one secret seed, recorded in each verdict


def test_a_closing_session_asks_every_worker_to_exit_before_it_waits_for_any(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Their exits overlap: a session's end costs one worker's exit, not the sum of them."""
    from cudasmith.harness.walls.process import WorkerProcess

    events: list[tuple[str, str]] = []
    ask, close = WorkerProcess.ask_to_exit, WorkerProcess.close

    def asked(worker: WorkerProcess) -> None:
        if worker.alive and not worker._exit_asked:
            events.append(("ask", worker.role))
        ask(worker)

    def closed(worker: WorkerProcess) -> None:
        if worker.alive:
            events.append(("close", worker.role))
        close(worker)

    monkeypatch.setattr(WorkerProcess, "ask_to_exit", asked)
    monkeypatch.setattr(WorkerProcess, "close", closed)
    judge = Judge(task="level1/vector_add", options=replace(QUICK, warm_workers=2), candidates=3)
    judge.close()
    first_close = next(i for i, (what, _) in enumerate(events) if what == "close")
    asks = [role for what, role in events[:first_close] if what == "ask"]
    # The warm candidate workers, the baseline worker (none without timing) and the judge's worker.
    assert sorted(asks) == ["candidate", "candidate", "reference"], events
    assert all(what == "close" for what, _ in events[first_close:]), events


@pytest.mark.slow
def test_the_seed_of_a_verdict_replays_the_same_input_sets() -> None:
    first = cudasmith.evaluate(SOLUTIONS / "vector_add_cpu.py", task="level1/vector_add", options=QUICK)
    assert first.seed is not None
    again = cudasmith.evaluate(
        SOLUTIONS / "vector_add_cpu.py",
        task="level1/vector_add",
        options=EvalOptions(**{**QUICK.__dict__, "seed": first.seed}),
    )
    assert again.seed == first.seed
    assert [c.rel_err for c in again.configs] == [c.rel_err for c in first.configs]


@pytest.mark.slow
def test_a_forward_that_never_returns_is_a_timeout_at_the_first_calls_limit() -> None:
    # The limit is the 5 s floor (the reference takes microseconds) and the first call's 10 s more; how
    # long a hang costs in wall time is benchmarks/throughput.py's to say, not a test's.
    verdict = cudasmith.evaluate(
        SOLUTIONS / "loops_forever.py", task="level1/vector_add", device="cpu", timing=False
    )
    assert verdict.status == Status.TIMEOUT, verdict.reason
    assert "within 15 s" in verdict.reason, verdict.reason
    assert "first call" in verdict.reason and "--first-call-extra" in verdict.reason
    assert verdict.limits["first_call_extra_s"] == 10.0


@pytest.mark.slow
def test_time_limits_can_be_set(tmp_path: Path) -> None:
    options = EvalOptions(device="cpu", timing=False, call_timeout_s=2.0, first_call_extra_s=0.0)
    verdict = cudasmith.evaluate(SOLUTIONS / "loops_forever.py", task="level1/vector_add", options=options)
    assert verdict.status == Status.TIMEOUT and "within 2 s" in verdict.reason, verdict.reason
    sleeper = tmp_path / "sleeps_at_import.py"
    sleeper.write_text("import time\ntime.sleep(60)\n")
    verdict = cudasmith.evaluate(sleeper, task="level1/vector_add", device="cpu", load_timeout_s=3.0)
    assert verdict.status == Status.TIMEOUT and "within 3 s while loading" in verdict.reason, verdict.reason


@pytest.mark.slow
def test_a_stale_or_tampered_cached_baseline_cannot_inflate_a_speedup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDASMITH_CACHE", str(tmp_path))
    options = EvalOptions(device="cpu", seeds_per_config=1, baselines=("eager",))
    solution, task = SOLUTIONS / "vector_add_cpu.py", "level1/vector_add"
    with Judge(task=task, options=options, candidates=1) as judge:
        honest = judge.judge(solution)
        assert honest.status == Status.CORRECT, honest.reason
        # What a session keeps on disk (a quiet measurement is kept; plant one where noise kept none),
        # inflated a hundredfold, as a stale file from a slower day would be (sealed by the judge: one
        # that fails its MAC is not even shown, see test_integrity).
        for result in honest.configs:
            config = next(c for i, c, _ in judge.selected if i == result.index)
            path = judge.baselines._path("eager", config)
            path.parent.mkdir(parents=True, exist_ok=True)
            kept = {"median_ms": result.baseline_ms * 100, "measured_at": "2026-01-01T00:00:00+00:00"}
            path.write_text(json.dumps(seal.seal(kept, BASELINE_PURPOSE)))
    later = cudasmith.evaluate(solution, task=task, options=options)
    assert later.status == Status.CORRECT, later.reason
    assert honest.speedup and later.speedup
    # The speedup comes from this session's own timing: within noise of the first, nowhere near 100x.
    assert 1 / 10 < later.speedup / honest.speedup < 10, (honest.speedup, later.speedup)
    eager = later.configs[0].baselines["eager"]
    assert eager.measured.startswith("in this session") and eager.measured_at
    assert eager.previous_session and eager.time_ms
    assert eager.previous_session.time_ms > 20 * eager.time_ms  # shown beside, never used


@pytest.mark.slow
def test_eval_takes_several_solutions_and_a_folder_and_prints_json_lines(tmp_path: Path) -> None:
    folder = tmp_path / "candidates"
    folder.mkdir()
    (folder / "a_honest.py").write_text((SOLUTIONS / "vector_add_cpu.py").read_text())
    (folder / "b_wrong.py").write_text((SOLUTIONS / "vector_add_misses_tail.py").read_text())
    result = run_cli("eval", str(SOLUTIONS / "vector_add_cpu.py"), str(folder), "--task", "level1/vector_add",
                     "--device", "cpu", "--no-timing", "--seeds", "1", "--json")  # fmt: skip
    assert result.returncode == 1, result.stderr  # one verdict is not correct
    lines = result.stdout.strip().splitlines()
    verdicts = [Verdict.from_dict(json.loads(line)) for line in lines]
    assert [Path(v.solution).name for v in verdicts] == ["vector_add_cpu.py", "a_honest.py", "b_wrong.py"]
    assert [str(v.status) for v in verdicts] == ["correct", "correct", "incorrect"]


@pytest.mark.slow
def test_one_solution_keeps_the_contract_of_exactly_one_json_object() -> None:
    result = run_cli("eval", str(SOLUTIONS / "vector_add_cpu.py"), "--task", "level1/vector_add", "--device", "cpu",
                     "--no-timing", "--seeds", "1", "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["status"] == "correct"


def test_bad_devices_and_paths_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cuda:N"):
        Judge(task="level1/relu", device="gpu")
    if not __import__("torch").cuda.is_available():
        with pytest.raises(UsageError, match="no CUDA GPU"):
            Judge(task="level1/relu", device="cuda:1")
    with (
        Judge(task="level1/relu", options=QUICK, candidates=0) as judge,
        pytest.raises(UsageError, match="not a file"),
    ):
        judge.judge(tmp_path)
    result = run_cli("eval", str(tmp_path), "--task", "level1/relu", "--device", "cpu")
    assert result.returncode == 2 and "no solution files" in result.stderr


def test_verdicts_round_trip_through_json_with_typed_statuses() -> None:
    verdict = cudasmith.evaluate(
        SOLUTIONS / "vector_add_misses_tail.py", task="level1/vector_add", options=QUICK
    )
    again = Verdict.from_dict(json.loads(json.dumps(verdict.to_dict())))
    assert again.status is Status.INCORRECT and again.configs[0].status is verdict.configs[0].status
    assert again.reason == verdict.reason and again.seed == verdict.seed
    with pytest.raises(UsageError):
        Verdict.from_dict({"status": "harness_error", "reason": "x"})


@pytest.mark.slow
def test_the_session_benchmark_judges_alike_one_shot_and_in_a_session() -> None:
    """benchmarks/session_cpu.py runs, and both ways call the same honest candidates correct (what a
    session saves is that benchmark's table, not this test's business)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from session_cpu import measure

    separate, together = measure(quick=True)
    assert separate.statuses == together.statuses == ["correct"] * len(separate.statuses)
    assert separate.seconds > 0 and together.seconds > 0


HELPER = '''"""A library installed outside site-packages that looks up its caller, as typing_extensions does."""
import sys


def caller_module() -> str:
    return sys._getframe(1).f_globals.get("__name__", "?")
'''
USES_HELPER = '''import torch
from torch import nn

import frame_helper
from cudasmith.runtime import compile_c

SOURCE = r"""
void vector_add(const float* a, const float* b, float* out, long n) {
    for (long i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
"""
vector_add = compile_c(SOURCE, "vector_add")


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        frame_helper.caller_module()
        out = torch.empty_like(a)
        vector_add(a.contiguous(), b.contiguous(), out, a.numel())
        return out
'''


@pytest.mark.slow
def test_packages_on_the_import_path_are_libraries_but_the_solutions_folder_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A package on PYTHONPATH (pip --target, a vendored folder) may read frames as site-packages may;
    the same module beside the solution, or on PYTHONPATH in the solution's own folder, is the solution's."""
    library = tmp_path / "library"
    library.mkdir()
    (library / "frame_helper.py").write_text(HELPER)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "solution.py").write_text(USES_HELPER)
    beside = tmp_path / "beside"
    beside.mkdir()
    (beside / "solution.py").write_text(USES_HELPER)
    (beside / "frame_helper.py").write_text(HELPER)
    with monkeypatch.context() as patched:
        patched.setenv("PYTHONPATH", os.pathsep.join([str(library), os.environ.get("PYTHONPATH", "")]))
        library_verdict = cudasmith.evaluate(outside / "solution.py", task="level1/vector_add", options=QUICK)
    with monkeypatch.context() as patched:
        patched.setenv("PYTHONPATH", os.pathsep.join([str(beside), os.environ.get("PYTHONPATH", "")]))
        beside_verdict = cudasmith.evaluate(beside / "solution.py", task="level1/vector_add", options=QUICK)
    assert library_verdict.status == Status.CORRECT, library_verdict.reason
    assert beside_verdict.status == Status.REJECTED
    assert "sys._getframe" in beside_verdict.reason


def test_a_session_opened_beside_another_starts_as_a_step_of_the_devices_lease() -> None:
    """Alone on a device, a session's start (its workers' imports, the problem's load) overlaps its first
    candidate's. Beside another session it is a step of the shared lease, done before the constructor
    returns, so that no timing window of the other overlaps those trusted workers' work."""
    timed = replace(QUICK, timing=True)
    with Judge(task="level1/vector_add", options=timed, candidates=1) as first:
        assert first.oracle._loaded is None and not first._started, "alone: started in the background"
        holds_before = first.lease.holds
        with Judge(task="level1/relu", options=timed, candidates=1) as second:
            assert first.lease is second.lease
            assert second._started and second.oracle._loaded is not None, "beside another: a step, waited for"
            assert second.baselines._load_id is None, "the baseline worker has loaded the problem too"
            assert first.lease._steps == 0 and first.lease.holds == holds_before


@pytest.mark.slow
def test_a_session_opened_while_another_times_shares_none_of_its_windows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A session opened in the middle of another's timing hold starts its workers (a step) after the hold,
    and on the CPU a later hold pauses its judge's imports and load: the timed session's windows stay its
    own, and its speedup stands. (Its judge once imported torch inside the other's window: shared on
    every retime, no speedup.)"""
    armed, timing, opening = threading.Event(), threading.Event(), threading.Event()
    hold = TimingLease.hold

    @contextmanager
    def signalling(lease: TimingLease, owner: Any = None, session: Any = None) -> Iterator[Any]:
        with hold(lease, owner, session) as held:
            if owner is not None and armed.is_set():
                registered = len(lease._workers)
                timing.set()
                assert opening.wait(60)
                # The window begins as soon as the other session has a worker on its way (at most 2 s).
                deadline = time.monotonic() + 2.0
                while len(lease._workers) == registered and time.monotonic() < deadline:
                    time.sleep(0.01)
            yield held

    monkeypatch.setattr(TimingLease, "hold", signalling)
    # A window of half a second (the CPU's time cap): a rewrite whose times stay noisy that long.
    timed = replace(QUICK, timing=True, rules="kernelbench")
    solution = SOLUTIONS / "kernelbench" / "diag_matmul_broadcast.py"
    with Judge(problem=PROBLEMS / "diag_matmul.py", options=timed, candidates=2) as first:
        # The first candidate's hold measures the device and the baselines: the second's is its window alone.
        assert first.judge(solution).speedup is not None
        armed.set()
        judged: list[Verdict] = []
        judging = threading.Thread(target=lambda: judged.append(first.judge(solution)))
        judging.start()
        assert timing.wait(300), "the candidate was never timed"
        opening.set()
        with Judge(task="level1/relu", options=timed, candidates=1):
            judging.join(300)
    verdict = judged[0]
    assert verdict.status == Status.CORRECT, verdict.reason
    assert verdict.timing is not None and verdict.timing.exclusive and verdict.timing.retimed_windows == 0, (
        verdict.timing
    )
    assert verdict.speedup is not None, verdict.notes


@pytest.mark.slow
def test_a_candidate_asks_to_finish_while_its_own_hold_keeps_it_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A timed candidate's last request goes out in its hold: after it, the next candidate's hold pauses
    its worker, and a Finish sent then waited (the verdict with it) for the whole of that hold."""
    from cudasmith.harness.walls.process import WorkerProcess

    in_hold: list[bool] = []
    original = WorkerProcess.ask_to_finish

    def ask_to_finish(worker: WorkerProcess, within_s: float) -> int:
        in_hold.append(judge.lease._holder == threading.get_ident())
        return original(worker, within_s)

    monkeypatch.setattr(WorkerProcess, "ask_to_finish", ask_to_finish)
    with Judge(task="level1/vector_add", options=replace(QUICK, timing=True), candidates=1) as judge:
        verdict = judge.judge(SOLUTIONS / "vector_add_cpu.py")
    assert verdict.status == Status.CORRECT, verdict.reason
    assert verdict.speedup is not None
    assert in_hold == [True]
