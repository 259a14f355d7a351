"""The figures of a stream row (benchmarks/stream_figures.py) on made-up rows: the steady state leaves each task's
first verdict out, the bound sets the exclusive time against the wall time, every second of the wall time is
counted once, and KernelBench's order makes any beginning of the stream a fair sample of it."""

from __future__ import annotations

import importlib
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import ROOT

BENCHMARKS = ROOT / "benchmarks"


@pytest.fixture(scope="module")
def scripts() -> Iterator[SimpleNamespace]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield SimpleNamespace(
            figures=importlib.import_module("stream_figures"),
            stream=importlib.import_module("throughput_stream"),
            report=importlib.import_module("throughput_report"),
        )
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_the_steady_state_starts_once_every_task_had_its_first_verdict(scripts: SimpleNamespace) -> None:
    task_of = {"a1": "a", "a2": "a", "a3": "a", "b1": "b", "b2": "b"}
    done = {"a1": 10.0, "a2": 12.0, "b1": 20.0, "a3": 26.0, "b2": 50.0}
    steady = scripts.figures.steady_state(done, task_of)
    assert (steady.judged, steady.window_s) == (2, 30.0), "a2 came before b's first: start-up, not steady"
    assert steady.per_minute == pytest.approx(4.0)
    assert scripts.figures.steady_state({"a1": 1.0}, {"a1": "a"}).per_minute is None


def test_the_bound_is_the_rate_of_the_exclusive_windows_alone(scripts: SimpleNamespace) -> None:
    bound = scripts.figures.Bound(exclusive_s=30.0, wall_s=60.0, judged=60)
    assert bound.per_minute == 120.0 and bound.share == 0.5
    rate = 60 / (60.0 / 60)
    assert rate / bound.per_minute == bound.share, "the share is the row's rate over the bound's"


def test_every_second_of_a_row_is_counted_once_holds_first(scripts: SimpleNamespace) -> None:
    figures = scripts.figures
    timeline = figures.Timeline(wall_s=20.0)
    # Clock offset 2 s (the child's start); one candidate imports 1-3, checks 3-6, holds 6-8, done at 9;
    # another imports 4-5 and checks 5-7, inside the first one's correctness and hold.
    figures.candidate_intervals(
        timeline, [(1.0, "loading the solution"), (3.0, "checking config 0")], 2.0, 9.0, (6.0, 8.0)
    )
    figures.candidate_intervals(
        timeline, [(4.0, "loading the solution"), (5.0, "checking config 0")], 2.0, 5.0, None
    )
    timeline.add("holds", 14.0, 15.0)  # a session's own hold (baselines ahead)
    parts = figures.wall_breakdown(timeline)
    assert parts == {"start": 3.0, "imports": 2.0, "correctness": 3.0, "holds": 3.0, "idle": 9.0}
    assert sum(parts.values()) == pytest.approx(timeline.wall_s)


def test_a_configs_timing_is_split_into_the_judges_and_the_workers_parts(scripts: SimpleNamespace) -> None:
    configs = [
        {"request_s": 0.2, "recheck_s": 0.05, "sampling_s": 0.1},
        {"request_s": 0.4, "sampling_s": 0.1},
    ]
    parts = scripts.figures.config_parts(configs)
    assert parts["request"] == pytest.approx(0.3) and parts["recheck"] == 0.05 and parts["inputs"] is None
    holds = scripts.figures.hold_parts(
        [{"held_s": 1.0, "requests_s": 0.6}, {"held_s": 3.0, "requests_s": 1.0}]
    )
    assert holds["held_s"] == 2.0 and holds["requests_s"] == 0.8
    line = scripts.figures.config_line(parts, holds, 2)
    assert "request 0.300 s" in line and "recheck 0.050 s" in line and "held 2.000 s" in line


def test_kernelbench_takes_the_stream_in_an_order_every_beginning_of_which_is_fair(
    scripts: SimpleNamespace,
) -> None:
    candidate = scripts.report.Candidate
    batch = [
        candidate(
            f"{task}/{i}.py", Path(f"{task}/{i}.py"), task, "correct", "load_inline" if i == 3 else "nvrtc"
        )
        for task in ("relu", "softmax")
        for i in range(8)
    ]
    order = scripts.stream.spread(batch)
    assert sorted(c.name for c in order) == sorted(c.name for c in batch)
    half = order[: len(order) // 2]
    assert Counter(c.kind for c in half)["load_inline"] == 1, "one of the two builds in each half"
    tasks = Counter(c.task for c in half)
    assert abs(tasks["relu"] - tasks["softmax"]) <= 1, "the tasks in turn"


def test_a_session_rows_summary_and_line_carry_the_steady_state_the_bound_and_the_wall_table(
    scripts: SimpleNamespace,
) -> None:
    report, stream = scripts.report, scripts.stream
    names = ["t/a.py", "t/b.py", "t/c.py", "u/d.py"]
    batch = [report.Candidate(n, Path(n), n.split("/")[0], "correct", "nvrtc") for n in names]
    row = stream.Row(report.Approach("session K=default", wall_s=40.0), stream.firsts(batch))
    row.approach.results = {n: report.Result("correct", 5.0) for n in names}
    row.clock_at_s = 4.0
    row.done_at = {"t/a.py": 12.0, "u/d.py": 14.0, "t/b.py": 24.0, "t/c.py": 34.0}
    row.phases = {
        n: [(1.0 + i, "loading the solution"), (2.0 + i, "checking config 0")] for i, n in enumerate(names)
    }
    row.holds = [("t/a.py", 6.0, 7.0), (None, 3.0, 3.5)]
    row.timing = {n: {"requests_s": 1.0, "held_s": 1.5} for n in names}
    row.tally = {"request_s": 10.0, "held_s": 14.0}
    summary = row.summary(batch, 3.0, 2.0)
    assert summary["steady"] == {"judged": 2, "window_s": 20.0, "per_minute": 6.0}
    assert summary["steady_vs_kernelbench"] == 3.0 and summary["vs_kernelbench"] == 2.0
    assert summary["bound"]["per_minute"] == 24.0 and summary["bound"]["share"] == 0.25
    assert summary["steady_share"] == pytest.approx(2.0 / 20.0)
    assert sum(summary["wall_s_by_phase"].values()) == pytest.approx(40.0)
    assert summary["wall_s_by_phase"]["holds"] == 1.5
    line = importlib.import_module("stream_report").row_line(row, {"rows": {"session K=default": summary}})
    assert "steady state 6.0 per GPU-minute (3.00x KernelBench's steady state" in line
    assert "bound 24.0 per GPU-minute (10.0 s of exclusive time in 40 s): 25% of it reached" in line
