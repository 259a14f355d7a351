"""Tables read well at 80 columns in a terminal, and written to a file or pipe they keep their natural
width: nothing is cut or folded, configs read `rows=8 cols=1000`, and what a solution printed or raised
is shown as the solution's."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from cudasmith.device import DevicePeaks
from cudasmith.hardware import Device
from cudasmith.harness.verdict import ConfigResult, Verdict
from cudasmith.harness.wire.results import TimingReport
from cudasmith.llm.base import Completion
from cudasmith.report.ask_table import print_ask
from cudasmith.report.device_table import print_device
from cudasmith.report.formats import config_text, milliseconds
from cudasmith.report.leaderboard import print_leaderboard
from cudasmith.report.optimize_view import print_summary as print_optimize_summary
from cudasmith.report.verdict_table import print_summary, print_verdict
from cudasmith.search.ask import AskResult, JudgedAnswer
from cudasmith.search.parsing import ParsedAnswer
from cudasmith.store import RunStore, Usage
from cudasmith.store.runs import load_run

from conftest import ROOT, SOLUTIONS
from stored_runs import search

WIDTH = 80


def rendered(print_table: Callable[..., None], *args: object) -> str:
    """What a table prints on an 80-column console."""
    out = io.StringIO()
    print_table(*args, console=Console(file=out, width=WIDTH, emoji=False))
    return out.getvalue()


def assert_fits(text: str) -> None:
    assert text.strip()
    too_wide = [line for line in text.splitlines() if len(line.rstrip()) > WIDTH]
    assert not too_wide, too_wide
    assert "…" not in re.sub(r"\[… .* …\]", "", text), "nothing is cut short"


def assert_whole(text: str) -> None:
    """Written to a file or pipe: nothing cut short, and no line folded (none ends where 80 columns do)."""
    assert text.strip()
    assert "…" not in re.sub(r"\[… .* …\]", "", text), "nothing is cut short"
    assert not [line for line in text.splitlines() if len(line) == WIDTH], "nothing folded at 80 columns"


def piped(*args: str) -> str:
    """The command's stdout when piped, as `cudasmith … | less` sees it."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    result = subprocess.run(
        [sys.executable, "-m", "cudasmith", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def timed_verdict() -> Verdict:
    configs = [
        ConfigResult(
            0,
            {"rows": 8, "cols": 1000},
            False,
            rel_err=3.4e-8,
            time_ms=0.1027,
            baseline_ms=0.0463,
            speedup=0.45,
            sol_pct=1.0,
        ),
        ConfigResult(
            1,
            {"rows": 1021, "cols": 4097},
            False,
            rel_err=3.1e-8,
            time_ms=12.558,
            baseline_ms=1.579,
            speedup=0.13,
            sol_pct=5.5,
        ),
        ConfigResult(
            3, "hidden#0", True, rel_err=3.2e-8, time_ms=117.139, baseline_ms=18.79, speedup=0.16, sol_pct=3.8
        ),
    ]
    return Verdict(
        status="correct",
        reason="correct on 3 configs, 12 input sets; 0.21x eager PyTorch (geometric mean)",
        task="level1/softmax",
        solution="examples/softmax_cpu.py",
        device="AMD EPYC 9454 48-Core Processor (2 cores)",
        speedup=0.21,
        configs=configs,
        timing=TimingReport("cold", "queued"),
    )


def test_config_text_is_compact() -> None:
    assert config_text({"rows": 8, "cols": 1000}) == "rows=8 cols=1000"
    assert config_text({"shape": [2, 3], "mode": "mean", "bias": True}) == "shape=[2,3] mode=mean bias=true"
    assert config_text({}) == "(default)" and config_text("hidden#0") == "hidden#0"
    assert [milliseconds(v) for v in (4.3e-5, 0.1027, 12.558, 1530.0)] == [
        "43 ns",
        "102.7 µs",
        "12.56 ms",
        "1.53 s",
    ]


def test_a_timed_verdict_fits_80_columns_with_whole_configs() -> None:
    text = rendered(print_verdict, timed_verdict())
    assert_fits(text)
    assert "rows=1021 cols=4097" in text and "hidden#0" in text and "12.56 ms" in text
    header = next(line for line in text.splitlines() if line.startswith("#"))
    assert "status" not in header, "every config is correct: no status column"


def test_noisy_speedups_and_sol_keep_every_config_on_one_line_at_80_columns() -> None:
    verdict = timed_verdict()
    ranges = [(101.97, 62.02, 195.4), (0.45, 0.401, 0.503), (12.34, 9.87, 15.02)]
    for result, (speedup, low, high) in zip(verdict.configs, ranges, strict=True):
        result.speedup, result.speedup_ci95, result.noisy, result.sol_pct = speedup, [low, high], True, 16.1
    text = rendered(print_verdict, verdict)
    assert_fits(text)
    rows = [line.split() for line in text.splitlines() if line[:1] in "013"]
    assert [row[:3] for row in rows] == [
        ["0", "rows=8", "cols=1000"],
        ["1", "rows=1021", "cols=4097"],
        ["3", "hidden#0", "3.2e-08"],
    ]
    assert rows[0][-3:] == ["101.97x", "(62–195)", "16.1"], "the range to three figures, % SOL on the row"


def test_a_failing_verdict_shows_status_and_the_solutions_traceback_and_output() -> None:
    verdict = Verdict(
        status="runtime_error",
        reason="config 0 {'n': 1000}: ValueError: not yet (solution.py:8 in forward)",
        task="level1/vector_add",
        solution="solution.py",
        device="cpu",
        configs=[ConfigResult(0, {"n": 1000}, False, status="runtime_error")],
        artifacts={
            "traceback": 'Traceback (most recent call last):\n  File "solution.py", line 8, in forward\nValueError: not yet',
            "stdout": "".join(f"step {i}\n" for i in range(100)),
        },
    )
    text = rendered(print_verdict, verdict)
    assert_fits(text)
    assert any(
        line.startswith("0 ") and "n=1000" in line and "runtime_error" in line for line in text.splitlines()
    )
    assert "the solution's traceback" in text and 'File "solution.py", line 8' in text
    assert "printed by the solution (stdout), first and last lines" in text
    assert "step 0" in text and "step 7" in text and "[… 84 lines …]" in text and "step 99" in text
    assert "step 50" not in text


def test_the_ask_table_wraps_reasons_at_80_columns(tmp_path: Path) -> None:
    wrong = Verdict(
        "incorrect",
        "config 0 {'rows': 8, 'cols': 1000}: 7790 of 8000 values differ (first at [0, 0]: expected 0.000118991, got 0.000465857)",
        "level1/softmax",
        "c.py",
        "cpu",
    )
    candidates = [
        JudgedAnswer(
            0,
            Completion("…", "stop", "fake", 3000, 900),
            ParsedAnswer("x", "", "fenced"),
            timed_verdict(),
            None,
        ),
        JudgedAnswer(
            1, Completion("…", "length", "fake", 3000, 12000), ParsedAnswer("x", "", "fenced"), wrong, None
        ),
    ]
    result = AskResult(
        tmp_path / "ask-1",
        "openai:fake",
        "level1/softmax",
        "cpu",
        candidates,
        Usage(1, 2, 6000, 12900),
        [],
        3.0,
    )
    text = rendered(print_ask, result)
    assert_fits(text)
    assert "0.000465857" in text and "12,000" in text
    assert "2 answers in 1 call" in text


def test_task_listing_piped_keeps_whole_descriptions() -> None:
    text = piped("tasks", "--level", "apps")
    assert_whole(text)
    lines = [line.strip() for line in text.splitlines()]
    assert any(line.startswith("apps/bfs ") for line in lines)
    bfs = "Breadth-first search distances from a source on a directed CSR graph (int32, -1 if unreached)."
    assert bfs in lines, "a description on one line of its own"
    assert any(line.startswith("10 tasks (apps 10).") for line in lines)


def test_show_piped_keeps_whole_configs_and_lines() -> None:
    text = piped("show", "level1/softmax", "--no-source", "--device", "cpu")
    assert_whole(text)
    assert any(line.split()[:3] == ["1", "rows=1021", "cols=4097"] for line in text.splitlines())
    assert "hidden" in text
    assert any(
        line.startswith("dtype float32 · ") and line.endswith("compile-max-autotune")
        for line in text.splitlines()
    )


@pytest.mark.slow
def test_eval_piped_end_to_end() -> None:
    text = piped(
        "eval",
        str(SOLUTIONS / "vector_add_prints.py"),
        "--task",
        "level1/vector_add",
        "--device",
        "cpu",
        "--no-timing",
    )
    assert_whole(text)
    headline = text.splitlines()[0]
    assert headline.startswith("correct  correct on ") and headline.endswith("input sets"), headline
    assert any(line.split()[:2] == ["1", "n=1048573"] for line in text.splitlines())
    assert "forward on 1000 values" in text
    assert "printed by the solution (stderr)" in text and "a warning of the solution's own" in text


def test_show_piped_prints_the_reference_source_as_written() -> None:
    """`show TASK > f`: the reference's source copied out of the file runs; no line of it is wrapped."""
    source = (ROOT / "src" / "cudasmith" / "tasks" / "suite" / "level3" / "gpt_forward.py").read_text()
    assert max(len(line) for line in source.splitlines()) > WIDTH, "a source with lines wider than 80 columns"
    assert source.rstrip() in piped("show", "level3/gpt_forward", "--device", "cpu")


def test_one_table_style_for_every_command(tmp_path: Path) -> None:
    """eval (a verdict, a session's summary), optimize's summary, report's leaderboard and device's table:
    a rule under a header where there is one, and no box or vertical line anywhere."""
    with RunStore(tmp_path / "runs.db") as store:
        view = load_run(store, search(store))
    peaks = DevicePeaks("CPU", "cpu", 20.0, {"float32": 0.5}, {"float32": 0.25}, 2**25)
    texts = [
        rendered(print_verdict, timed_verdict()),
        rendered(print_summary, [timed_verdict(), timed_verdict()]),
        rendered(print_optimize_summary, view.summary),
        rendered(print_leaderboard, [view]),
        rendered(print_device, Device("cpu", "CPU", 2**34, cores=2), peaks),
    ]
    for text in texts:
        assert not set(text) & set("│┃┆┊║╭╮╰╯┏┓┗┛┌┐└┘"), text
    assert "s of judging summed over candidates (several at once)" in " ".join(texts[2].split())


def test_a_verdict_on_doubtful_peaks_says_its_matrix_sol_is_inflated() -> None:
    verdict = timed_verdict()
    verdict.peaks = DevicePeaks("CPU", "cpu", 20.0, {"float32": 0.03}, {"float32": 0.165}, 2**25)
    text = " ".join(rendered(print_verdict, verdict).split())
    assert "% SOL of matrix work inflated: float32 matrix units measured at 0.03 TFLOP/s" in text
    verdict.peaks = DevicePeaks("CPU", "cpu", 20.0, {"float32": 0.15}, {"float32": 0.165}, 2**25)
    assert "inflated" not in rendered(print_verdict, verdict)
