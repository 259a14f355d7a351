"""Listing tasks: the built-in suite with counts per level, a KernelBench-style checkout read from a
directory (level 4 skipped, broken files reported), `cudasmith show`, and the KernelBench check script."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cudasmith.cli import app
from cudasmith.device import DevicePeaks
from cudasmith.harness.task_details import task_details
from cudasmith.harness.witnesses.roofline import PHYSICS_MARGIN
from cudasmith.tasks import load_task
from cudasmith.tasks.directory import DOWNLOAD_REASON, load_problem_dir, problem_files

from conftest import PROBLEMS, ROOT

runner = CliRunner()


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A miniature KernelBench checkout: two good problems, a broken one, and a level-4 one that must not be imported."""
    levels = tmp_path / "KernelBench"
    for level in ("level1", "level2", "level4"):
        (levels / level).mkdir(parents=True)
    shutil.copy(PROBLEMS / "kernelbench_style_add.py", levels / "level1" / "2_Add.py")
    add_again = (PROBLEMS / "kernelbench_style_add.py").read_text().split("\n", 1)[1]
    (levels / "level1" / "10_AddAgain.py").write_text(
        add_again.replace("nn.Module):", 'nn.Module):\n    """Adds."""')
    )
    (levels / "level2" / "1_Broken.py").write_text("import torch\nraise RuntimeError('broken on purpose')\n")
    (levels / "level4" / "1_Gpt2.py").write_text(
        "raise SystemExit('imported a model-download problem')\n# AutoModel.from_pretrained('gpt2')\n"
    )
    (levels / "changelog").mkdir()
    return tmp_path


def test_a_checkout_loads_with_kernelbench_names(checkout: Path) -> None:
    listing = load_problem_dir(checkout)
    assert [p.name for p in listing.problems] == [
        "kernelbench/level1/2_Add",
        "kernelbench/level1/10_AddAgain",
    ]
    assert [(u.name, u.reason) for u in listing.skipped] == [("kernelbench/level4/1_Gpt2", DOWNLOAD_REASON)]
    assert [u.name for u in listing.failed] == ["kernelbench/level2/1_Broken"]
    assert "broken on purpose" in listing.failed[0].reason
    assert [p.description for p in listing.problems] == [
        "A problem in plain KernelBench form: no configs, no extensions.",
        "Adds.",
    ]
    assert [name for name, _ in problem_files(checkout / "KernelBench" / "level1")] == [
        "kernelbench/level1/2_Add",
        "kernelbench/level1/10_AddAgain",
    ]
    assert "problems/kernelbench_style_add" in [name for name, _ in problem_files(PROBLEMS)]


def test_tasks_json_counts_every_level() -> None:
    result = runner.invoke(app, ["tasks", "--json"])
    assert result.exit_code == 0, result.output
    listing = json.loads(result.stdout)
    assert listing["total"] == len(listing["tasks"]) == sum(listing["counts"].values())
    for level, least in {"level3": 10, "apps": 8, "backward": 6, "challenge": 4}.items():
        assert listing["counts"][level] >= least
    bfs = next(row for row in listing["tasks"] if row["name"] == "apps/bfs")
    assert bfs["validator"] and bfs["dtype"] == "int32" and "expert" not in bfs["baselines"]
    gemm = next(row for row in listing["tasks"] if row["name"] == "challenge/gemm_bf16")
    assert (
        gemm["baselines"][0] == "eager" and gemm["baselines"][-1] == "expert" and gemm["expert"] == "CuBLAS"
    )


def test_tasks_lists_a_checkout_and_filters_a_level(checkout: Path) -> None:
    result = runner.invoke(app, ["tasks", "--problem-dir", str(checkout), "--json", "--level", "level1"])
    assert result.exit_code == 0, result.output
    listing = json.loads(result.stdout)
    assert listing["counts"] == {"kernelbench/level1": 2}
    result = runner.invoke(app, ["tasks", "--from", str(checkout)])
    assert result.exit_code == 0, result.output
    assert "kernelbench/level1/10_AddAgain" in result.stdout and "needs model downloads" in result.stdout
    result = runner.invoke(app, ["tasks", "--from", str(checkout / "missing")])
    assert result.exit_code == 2


def test_show_prints_configs_and_says_when_peaks_are_not_measured(tmp_path: Path) -> None:
    env = {"COLUMNS": "200", "CUDASMITH_CACHE": str(tmp_path)}  # a cache where no peaks were measured
    result = runner.invoke(app, ["show", "challenge/gemm_bf16", "--no-source"], env=env)
    assert result.exit_code == 0, result.output
    assert "8192" in result.stdout and "1.10 TFLOP" in result.stdout and "expert (CuBLAS)" in result.stdout
    assert "device peaks not measured yet" in result.stdout
    details = json.loads(runner.invoke(app, ["show", "challenge/gemm_bf16", "--json"]).stdout)
    assert details["config_figures"][2]["flops"] == 2 * 8192**3
    assert details["tolerance"]["rtol"] == 0.03 and "class Model" in details["source"]
    result = runner.invoke(app, ["show", str(PROBLEMS / "kernelbench_style_add.py")])
    assert result.exit_code == 0 and "return a + b" in result.stdout


def test_roofline_figures_come_from_measured_peaks() -> None:
    peaks = DevicePeaks(
        device="a test GPU",
        kind="cuda",
        memory_gb_per_s=1000.0,
        matrix_tflops={"bfloat16": 500.0},
        vector_tflops={},
        cache_bytes=0,
    )
    top = task_details(load_task("challenge/gemm_bf16"), peaks)["config_figures"][2]
    assert top["bound"] == "compute"
    assert top["sol_ms"] == pytest.approx(2 * 8192**3 / 500e12 * 1e3)
    assert top["floor_ms"] == pytest.approx(top["sol_ms"] / PHYSICS_MARGIN["cuda"])


def test_kernelbench_check_script_counts_explains_and_resumes(checkout: Path, tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    earlier = {"name": "kernelbench/level1/2_Add", "device": "cpu", "status": "ran", "float64": "ok"}
    results.write_text(json.dumps(earlier) + "\n")
    script = ROOT / "benchmarks" / "kernelbench_compat.py"
    command = [sys.executable, str(script), str(checkout), "--device", "cpu", "--results", str(results)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 1, result.stderr
    assert "kernelbench/level2/1_Broken" in result.stdout and "broken on purpose" in result.stdout
    assert "level4: 1 skipped: needs model downloads" in result.stdout
    records = [json.loads(line) for line in results.read_text().splitlines()]
    assert records[0] == earlier, "an earlier result is kept, not redone"
    assert [(r["name"], r["status"], r["float64"]) for r in records[1:]] == [
        ("kernelbench/level1/10_AddAgain", "ran", "ok")
    ]
