"""The launch-cost calibration on the CPU: ncu's CSV, the cache, how the cost enters times and baselines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cudasmith.device import launch_cost, software_versions
from cudasmith.device.launch_cost import LaunchCost, load_launch_cost, parse_ncu_csv, save_launch_cost
from cudasmith.timing.spans import with_launch_cost

CSV = """==PROF== Connected to process 7 (/usr/bin/python3)
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","7","python3","127.0.0.1","cudasmith_calibrate_empty","1","7","(32, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","1,344"
"1","7","python3","127.0.0.1","cudasmith_calibrate_empty","1","7","(32, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","1.41"
"2","7","python3","127.0.0.1","other(float*)","1","7","(32, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","sm__cycles_elapsed.avg","cycle","900"
"""


def test_ncu_csv_gives_every_time_per_kernel_in_ms() -> None:
    assert parse_ncu_csv(CSV) == {
        "cudasmith_calibrate_empty": [pytest.approx(0.001344), pytest.approx(0.00141)]
    }
    assert parse_ncu_csv("==PROF== no kernels profiled\n") == {}


def test_a_calibration_is_cached_per_device_and_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDASMITH_CACHE", str(tmp_path))
    monkeypatch.setattr(launch_cost, "_loaded", {})
    assert load_launch_cost("NVIDIA H200") is None
    cost = LaunchCost("NVIDIA H200", 0.74, 1.36, 0.62, versions=software_versions())
    save_launch_cost(cost)
    monkeypatch.setattr(launch_cost, "_loaded", {})
    assert load_launch_cost("NVIDIA H200") == cost
    assert load_launch_cost("NVIDIA H100 80GB HBM3") is None  # another device is not calibrated by it


def test_the_cost_is_added_once_per_call_with_gpu_work() -> None:
    assert with_launch_cost([0.0014, 0.0, 0.5], 0.0008) == [
        pytest.approx(0.0022),
        0.0,
        pytest.approx(0.5008),
    ]


def test_baseline_times_kept_on_disk_are_keyed_by_the_launch_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A calibration changes what GPU times mean: an earlier session's time from before it is not shown."""
    from cudasmith.harness.baselines import SessionBaselines

    monkeypatch.setenv("CUDASMITH_CACHE", str(tmp_path))
    identity = {"device": "NVIDIA H200", **software_versions(), "launch_us": None}
    bare = SessionBaselines(lambda: None, ("eager",), json.dumps(identity, sort_keys=True))  # type: ignore[arg-type, return-value]
    calibrated = SessionBaselines(
        lambda: None,  # type: ignore[arg-type, return-value]
        ("eager",),
        json.dumps({**identity, "launch_us": 0.74}, sort_keys=True),
    )
    assert bare._path("eager", {"n": 1000}) != calibrated._path("eager", {"n": 1000})
    assert bare._path("eager", {"n": 1000}) == bare._path("eager", {"n": 1000})


@pytest.mark.slow
def test_device_json_on_the_cpu_has_no_launch_cost(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cudasmith", "device", "--device", "cpu", "--json", "--no-measure"],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "CUDASMITH_CACHE": str(tmp_path)},
        timeout=120,
        check=True,
    )
    assert json.loads(done.stdout)["launch_cost"] is None


@pytest.mark.slow
def test_the_ncu_program_refuses_to_run_without_its_flag() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cudasmith.device.launch_cost"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "--launch" in done.stderr
