"""benchmarks/timing_fidelity.py: its parsing and judging on made-up numbers, and a quick run on the CPU."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "timing_fidelity.py"


@pytest.fixture(scope="module")
def fidelity() -> ModuleType:
    spec = importlib.util.spec_from_file_location("timing_fidelity", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["timing_fidelity"] = module
    spec.loader.exec_module(module)
    return module


NCU_LOG = """==PROF== Connected to process 4242 (/usr/bin/python3.12)
==PROF== Profiling "fidelity_add_8m" - 0: 0%....50%....100% - 1 pass
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","python3.12","127.0.0.1","fidelity_add_8m","1","7","(256, 1, 1)","(8192, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","30,112"
"1","4242","python3.12","127.0.0.1","fidelity_add_8m","1","7","(256, 1, 1)","(8192, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","30,208"
"2","4242","python3.12","127.0.0.1","fidelity_add_8m","1","7","(256, 1, 1)","(8192, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","29,984"
"3","4242","python3.12","127.0.0.1","fidelity_fma_10ms","1","7","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","msecond","10.02"
==PROF== Disconnected from process 4242
"""


def test_ncu_csv_gives_the_median_per_kernel_in_ms(fidelity: ModuleType) -> None:
    found = fidelity.parse_ncu_csv(NCU_LOG)
    assert found == {"add_8m": pytest.approx(0.030112), "fma_10ms": pytest.approx(10.02)}
    assert fidelity.parse_ncu_csv("==ERROR== ERR_NVGPUCTRPERM") == {}


def test_criteria_are_judged_per_duration_class(fidelity: ModuleType) -> None:
    kernels = (fidelity.Kernel("add_1m", "add", 2**20), fidelity.Kernel("add_8m", "add", 2**23))
    ncu = {"add_1m": 0.005, "add_8m": 0.030}
    runs = [
        {
            "add_1m": {
                "ours": 0.0052 + k * 1e-5,
                "ours-events": 0.007,
                "do_bench": 0.009,
                "kernelbench": 0.01,
            },
            "add_8m": {
                "ours": 0.0301 + k * 1e-4,
                "ours-events": 0.031,
                "do_bench": None,
                "kernelbench": 0.04,
            },
        }
        for k in range(5)
    ]
    rows = fidelity.summarise(kernels, runs, ncu)
    assert rows["add_8m"]["ours"]["ms"] == pytest.approx(0.0303)
    assert rows["add_8m"]["ours"]["spread_pct"] == pytest.approx((0.0305 / 0.0301 - 1) * 100)
    assert rows["add_1m"]["ours"]["vs_ncu_pct"] == pytest.approx((0.00522 / 0.005 - 1) * 100)
    assert rows["add_8m"]["do_bench"]["ms"] is None
    sensitivity = {"add_8m": {"wins": 9, "runs": 10}, "add_1m": {"wins": 7, "runs": 10}}
    lines = fidelity.verdicts(kernels, rows, sensitivity)
    assert lines[0].startswith("repeatability ≥20 µs: FAIL")  # 1.3 % spread is over the 1 % limit
    assert lines[1].startswith("repeatability <20 µs: PASS")
    assert lines[2].startswith("accuracy vs ncu ≥20 µs: PASS") and lines[3].startswith(
        "accuracy vs ncu <20 µs: PASS"
    )
    # No bare spans in these runs: the comparison line says so.
    assert lines[4] == "(ours-span, for comparison) accuracy vs ncu ≥20 µs: not measured"
    assert "add_8m +5 % work: PASS" in lines[6] and "add_1m +5 % work: FAIL" in lines[7]
    assert lines[8] == "timing cost <1 ms: no kernel under 1 ms measured"  # no wall times in these runs
    for k, run in enumerate(runs):
        run["add_1m"]["ours_wall_s"], run["add_8m"]["ours_wall_s"] = 0.1 + 0.01 * k, 0.35
    rows = fidelity.summarise(kernels, runs, ncu)
    assert rows["add_1m"]["ours_wall_s"]["s"] == pytest.approx(0.12)
    cost_line = fidelity.verdicts(kernels, rows, sensitivity)[8]
    assert cost_line.startswith("timing cost <1 ms: FAIL") and "worst add_8m 0.35 s" in cost_line
    text = fidelity.table(kernels, rows)
    assert "add_8m" in text and "30.00" in text and "+4.4%" in text and "cost s" in text and "0.350" in text
    for k, run in enumerate(runs):
        run["add_1m"]["ours_phases_s"] = {"warmup": 0.05, "sampling": 0.1 + 0.01 * k, "records": 0.02}
        run["add_1m"]["ours_n"] = 300 + k
    rows = fidelity.summarise(kernels, runs, ncu)
    assert rows["add_1m"]["ours_phases_s"] == {
        "warmup": 0.05,
        "sampling": pytest.approx(0.12),
        "records": 0.02,
    }
    costs = fidelity.cost_table(kernels, rows).splitlines()
    assert costs[2].split() == ["add_1m", "0.120", "0.050", "0.120", "0.020", "302"]
    assert costs[3].split() == ["add_8m", "0.350", "–", "–", "–", "–"]


@pytest.mark.slow
def test_a_quick_cpu_run_prints_the_table_last(tmp_path: Path) -> None:
    out = tmp_path / "fidelity.json"
    command = [sys.executable, str(SCRIPT), "--device", "cpu", "--quick", "--processes", "1"]
    command += ["--sensitivity-runs", "1", "--json", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert any(line.startswith("add_1m") for line in lines) and lines[-2].startswith("sensitivity add_1m")
    assert lines[-1].startswith("timing cost <1 ms: ")
    document = json.loads(out.read_text())
    assert document["rows"]["add_64k"]["ours"]["ms"] > 0 and "add_1m" in document["sensitivity"]
    assert document["rows"]["add_64k"]["ours_wall_s"]["s"] > 0
    assert document["rows"]["add_64k"]["ours_phases_s"]["sampling"] > 0
    assert "Timing cost per kernel" in done.stdout
