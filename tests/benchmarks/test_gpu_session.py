"""benchmarks/gpu_session.py without a GPU: its list of GPU test files is the tests' own, a step past its time
is killed and says so, and a step that would get less than its least useful time is skipped, not started."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from conftest import ROOT

BENCHMARKS = ROOT / "benchmarks"


@pytest.fixture(scope="module")
def session() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield importlib.import_module("gpu_session")
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_every_file_with_a_gpu_test_is_run_and_only_those(session: ModuleType) -> None:
    # pytest's own collection of the gpu marker (collected without a GPU too; skipped only when run)
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", "gpu", "tests"],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
    )  # fmt: skip
    assert collected.returncode == 0, collected.stdout[-2000:]
    marked = {line.split("::")[0] for line in collected.stdout.splitlines() if "::" in line}
    assert marked == set(session.TEST_ORDER)
    assert session.TEST_ORDER[0] == "tests/exploits/test_exploits_gpu.py"
    # each test the switch's probe names is a GPU test (a whole function, or one of its cases)
    ids = [line.strip() for line in collected.stdout.splitlines() if "::" in line]
    for probe in session.SWITCH_PROBE:
        assert any(i == probe or i.startswith(probe + "[") for i in ids), probe


def test_a_step_past_its_time_is_killed_and_its_lines_are_kept(session: ModuleType, tmp_path: Path) -> None:
    code = "import time; print('begun', flush=True); time.sleep(120)"
    step = session.Step("sleeper", [sys.executable, "-c", code], cap_s=600.0, least_s=0.0)
    outcome = session.run_step(step, 3.0, tmp_path, {"PATH": "/usr/bin:/bin"})
    assert outcome.timed_out and outcome.rc is None
    assert outcome.wall_s < 60  # killed, not waited for: the sleep is two minutes
    assert (tmp_path / "sleeper.log").read_text() == "begun\n"


def test_a_step_that_finishes_gives_its_exit_code(session: ModuleType, tmp_path: Path) -> None:
    step = session.Step("fails", [sys.executable, "-c", "raise SystemExit(3)"], cap_s=600.0, least_s=0.0)
    outcome = session.run_step(step, 120.0, tmp_path, {"PATH": "/usr/bin:/bin"})
    assert (outcome.rc, outcome.timed_out) == (3, False)


def test_steps_that_do_not_fit_the_budget_are_skipped_and_the_table_says_so(tmp_path: Path) -> None:
    # The tests step needs a minute; a budget of 30 s leaves it no time: skipped, nothing started.
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "gpu_session.py"), "--out", str(tmp_path), "--budget-s", "30",
         "--steps", "tests", "--wheels", str(tmp_path / "none")],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "tests: skipped" in done.stdout
    outcomes = json.loads((tmp_path / "session.json").read_text())
    assert [(o["name"], o["rc"], o["skipped"] != "") for o in outcomes] == [("tests", None, True)]


def test_a_detached_session_runs_on_and_is_collected_later(tmp_path: Path) -> None:
    # Detached, the call returns at once; the session (here a step skipped for want of time) ends on its
    # own, and --collect waits for it, copies its files and says it ended.
    away, out = tmp_path / "away", tmp_path / "out"
    started = subprocess.run(
        [sys.executable, str(BENCHMARKS / "gpu_session.py"), "--out", str(away), "--budget-s", "30",
         "--steps", "tests", "--wheels", str(tmp_path / "none"), "--detach"],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    assert "session started" in started.stdout
    collected = subprocess.run(
        [sys.executable, str(BENCHMARKS / "gpu_session.py"), "--collect", str(away), "--out", str(out),
         "--wait-s", "240"],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert collected.returncode == 0, collected.stdout + collected.stderr
    assert "session ended" in collected.stdout and "tests: skipped" in collected.stdout
    assert json.loads((out / "session.json").read_text())[0]["name"] == "tests"
    assert (out / "session.log").exists()


def test_an_unknown_step_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "gpu_session.py"), "--out", str(tmp_path), "--budget-s", "30",
         "--steps", "tests,nosuch"],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2
    assert "unknown step(s) nosuch" in done.stderr


def test_the_live_report_prints_a_failure_as_it_happens(tmp_path: Path) -> None:
    (tmp_path / "test_two.py").write_text(
        "def test_fails():\n    assert 1 + 1 == 3, 'arithmetic'\n\ndef test_passes():\n    pass\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "pytest_live", "test_two.py"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(BENCHMARKS)},
    )  # fmt: skip
    assert done.returncode == 1
    live = done.stdout.split("= FAILURES =")[0]  # what was printed before pytest's own summary
    failed = live[live.index("[failed") :]
    assert "test_two.py::test_fails (call)" in failed and "arithmetic" in failed
    assert "[passed" in live and "test_two.py::test_passes" in live


def test_the_switch_is_handed_on_only_where_the_last_step_that_tried_it_found_it_working(
    session: ModuleType,
) -> None:
    def ran(**codes: int | None) -> list:
        return [session.Outcome(f"stream_records_{mode}", rc, 1.0, rc is None) for mode, rc in codes.items()]

    def probe(rc: int | None, skipped: str = "") -> list:
        return [session.Outcome("switch_probe", rc, 1.0, rc is None, skipped)]

    assert session.chosen_switch([session.Outcome("tests", 0, 1.0, False)]) is None  # the step did not run
    assert session.chosen_switch(ran(off=1)) is None  # the switch's own run has not happened yet
    assert session.chosen_switch(ran(off=1, every=0)) == "1"
    assert session.chosen_switch(ran(off=1, every=None)) == "0"  # it hung (killed)
    assert session.chosen_switch(ran(off=0, every=1, events=0)) == "0"  # the default policy read otherwise
    assert session.chosen_switch(ran(every=0) + probe(1)) == "0", "the probe's tests failed under it"
    assert session.chosen_switch(ran(every=1) + probe(0)) == "1", "the probe ran the judge itself"
    assert session.chosen_switch(ran(every=0) + probe(None, "no time")) == "1", "a skipped probe says nothing"


def test_the_steps_that_decide_the_switch_are_steps_it_runs(session: ModuleType, tmp_path: Path) -> None:
    # A decider misnamed would never hand the switch on (the races step once named one run and read another).
    names = {step.name for group in session.steps(tmp_path, 600.0).values() for step in group}
    assert set(session.SWITCH_DECIDERS) <= names
