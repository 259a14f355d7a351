"""benchmarks/search_quality.py: its metrics on made-up numbers, and its plumbing with a replay model."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from conftest import PROBLEMS, ROOT

SCRIPT = ROOT / "benchmarks" / "search_quality.py"


@pytest.fixture(scope="module")
def quality() -> ModuleType:
    spec = importlib.util.spec_from_file_location("search_quality", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_correctness_fast_p_and_geomean_count_failed_tasks(quality: ModuleType) -> None:
    results = {
        "a": {"eager": 2.0, "compile": 0.5},
        "b": {"eager": 0.5, "compile": 0.25},
        "c": None,
        "d": None,
    }
    report = quality.metrics(results)
    assert (report["correct"], report["correctness"]) == (2, 0.5)
    assert report["fast_p_eager"] == {"0.0": 0.5, "1.0": 0.25, "1.5": 0.25, "2.0": 0.0}
    assert report["geomean_eager"] == pytest.approx(1.0) and report["geomean_compile"] == pytest.approx(
        0.5**1.5
    )


@pytest.mark.slow
def test_a_run_per_task_is_kept_and_not_run_again(tmp_path: Path) -> None:
    recording = tmp_path / "answers.jsonl"
    recording.write_text(json.dumps("No code today.") + "\n")
    command = [
        sys.executable,
        str(SCRIPT),
        "--model",
        f"replay:{recording}",
        "--tasks",
        str(PROBLEMS / "add_small.py"),
    ]
    command += ["-n", "1", "--depth", "1", "--device", "cpu", "--store", str(tmp_path / "q.db"), "--json"]
    for _ in range(2):  # the second finds the finished run (the recording has no answer left to give)
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert (report["tasks"], report["correct"], report["known_cost_usd"]) == (1, 0, 0.0)
