"""benchmarks/scaling.py on the CPU, as CI can run it: two lanes through the local executor and through
Ray (a local instance), every candidate of the batch given its expected status, a row per executor."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT


@pytest.mark.slow
def test_the_scaling_benchmark_judges_the_batch_through_both_executors(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="the Ray rows need Ray (pip install 'cudasmith[ray]')")
    rows_file = tmp_path / "rows.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "scaling.py"), "--device", "cpu", "--lanes", "2"]
    command += ["--repeat", "1", "--quick", "--json", str(rows_file)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads(rows_file.read_text())
    assert [(row["executor"], row["lanes"]) for row in rows] == [("local", 2), ("ray", 2)]
    for row in rows:
        assert row["error"] == "" and row["unexpected"] == [] and row["candidates"] == 6
        assert row["per_minute"] > 0 and 0 < row["busy_fraction"] <= 1 and row["built_ahead"] == 5
    assert "per minute" in done.stdout and "lane busy" in done.stdout


def test_a_row_out_of_its_share_says_what_it_had_done(tmp_path: Path) -> None:
    rows_file = tmp_path / "rows.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "scaling.py"), "--device", "cpu", "--lanes", "1"]
    command += [
        "--executors",
        "local",
        "--repeat",
        "1",
        "--quick",
        "--budget-s",
        "3",
        "--json",
        str(rows_file),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    [row] = json.loads(rows_file.read_text())
    assert row["error"].startswith("out of its 3 s share: ") and "judged (lanes: cpu " in row["error"]
    assert row["candidates"] < 6 and row["wall_s"] < 60
    assert done.returncode == 1 and "out of its 3 s share" in done.stderr
    assert "per minute" in done.stdout  # the row's table, printed when the row ended


def test_with_no_lanes_given_it_measures_one_lane_then_two_on_any_device() -> None:
    """The README's numbers are for one lane and two, on the CPU machine too."""
    spec = importlib.util.spec_from_file_location("scaling", ROOT / "benchmarks" / "scaling.py")
    assert spec is not None and spec.loader is not None
    scaling = importlib.util.module_from_spec(spec)
    sys.modules["scaling"] = scaling  # its dataclasses look their module up there
    spec.loader.exec_module(scaling)
    assert scaling.lane_counts(None) == [1, 2]
    assert scaling.lane_counts("1,2,4") == [1, 2, 4]
