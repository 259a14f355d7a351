"""The parent owns the truth: stored verdicts, seeds, cached measurements and build folders carry the
judge's MAC; whatever fails it is shown as tampered and never reused."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from cudasmith.errors import UsageError
from cudasmith.harness import sandbox
from cudasmith.harness.options import EvalOptions
from cudasmith.harness.scratch import folder_intact, seal_folder
from cudasmith.report.runs import load_run
from cudasmith.runtime import seal
from cudasmith.store import CacheKey, RunStore

from conftest import run_cli
from stored_runs import bench_of_files

KEY = CacheKey("v", "NVIDIA H200 (test)", "h", "o")


def test_a_verdict_edited_by_hand_shows_as_tampered_and_is_not_reused(tmp_path: Path) -> None:
    """The forged result of issue 27: a wrong kernel's verdict rewritten to correct, 50x, with sqlite3."""
    path = tmp_path / "cudasmith.db"
    with RunStore(path) as store:
        run_id = bench_of_files(store)
        wrong = next(c for c in store.candidates(run_id) if c.status == "incorrect")
        assert store.cached_verdict(wrong.code_hash or "", KEY) is not None
    forged = json.dumps({"status": "correct", "reason": "correct", "speedup": 50.0, "configs": []})
    edit = (
        f"UPDATE verdicts SET status='correct', speedup=50.0, verdict='{forged}' WHERE id={wrong.verdict_id};"
    )
    subprocess.run(["sqlite3", str(path), edit], check=True) if _has_sqlite3() else _edit(path, edit)
    with RunStore(path) as store:
        assert store.cached_verdict(wrong.code_hash or "", KEY) is None, "a tampered row is never reused"
        assert store.candidate(wrong.id).status == "tampered"
        view = load_run(store, run_id)
    assert view.summary.statuses.get("tampered") == 1
    assert view.summary.statuses.get("correct") == 2, "the forged verdict counts for nothing"
    done = run_cli("report", run_id, "--store", str(path))
    assert done.returncode == 0, done.stderr
    assert "tampered" in done.stdout


def _has_sqlite3() -> bool:
    return subprocess.run(["which", "sqlite3"], capture_output=True, check=False).returncode == 0


def _edit(path: Path, sql: str) -> None:
    with sqlite3.connect(path) as db:
        db.execute(sql)


def test_the_run_seed_is_never_in_clear_in_the_file(tmp_path: Path) -> None:
    from cudasmith.store import Run

    path = tmp_path / "cudasmith.db"
    with RunStore(path) as store:
        run = store.create_run(Run("bench", "t", "v", "cpu", "cpu", "h", secret_seed=987654321))
        assert store.run(run.id).secret_seed == 987654321
    with sqlite3.connect(path) as db:
        stored = db.execute("SELECT secret_seed FROM runs").fetchone()[0]
    assert stored != 987654321


def test_cached_measurements_that_fail_their_mac_are_measured_again(tmp_path: Path) -> None:
    """Device peaks rewritten by hand (a faster device makes every kernel look slower) are not loaded."""
    from cudasmith.device import DevicePeaks, load_peaks, save_peaks, software_versions

    peaks = DevicePeaks(
        "AMD EPYC (test)",
        "cpu",
        50.0,
        {"float32": 0.2},
        {"float32": 0.3},
        2**25,
        versions=software_versions(),
    )
    path = save_peaks(peaks)
    assert load_peaks(name=peaks.device) == peaks
    data = json.loads(path.read_text())
    data["memory_gb_per_s"] = 5000.0
    path.write_text(json.dumps(data))
    assert load_peaks(name=peaks.device) is None
    assert seal.unseal(seal.seal({"median_ms": 1.0}, "baseline-time"), "baseline-time") == {"median_ms": 1.0}
    assert seal.unseal({"median_ms": 1.0, "mac": "0" * 64}, "baseline-time") is None


def test_a_build_folder_changed_after_its_seal_is_not_trusted(tmp_path: Path) -> None:
    folder = tmp_path / "build"
    (folder / "_cpu").mkdir(parents=True)
    (folder / "_cpu" / "kernel.so").write_bytes(b"library")
    assert not folder_intact(folder), "never sealed: not trusted"
    seal_folder(folder)
    assert folder_intact(folder)
    (folder / "_cpu" / "kernel.so").write_bytes(b"planted")
    assert not folder_intact(folder)


def test_require_isolation_refuses_to_judge_without_a_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    EvalOptions(device="cpu", require_isolation=True).validate()  # this machine has one
    monkeypatch.setattr(
        sandbox, "unavailable", lambda: "filesystem not isolated (no Landlock, no namespaces)"
    )
    with pytest.raises(UsageError, match="refusing to judge"):
        EvalOptions(device="cpu", require_isolation=True).validate()
    EvalOptions(device="cpu").validate()


def test_a_cached_kernel_changed_on_disk_is_compiled_again() -> None:
    """A library planted under a cached kernel's key is not loaded: its MAC does not hold."""
    from cudasmith.runtime import cpu

    source = "void add_one(float* x, long n) { for (long i = 0; i < n; ++i) x[i] += 1.0f; }"
    first = cpu.compile_c(source, "add_one")
    cpu._compiled.clear()
    assert cpu.compile_c(source, "add_one").from_cache, "an intact entry is reused"
    first.library_path.unlink()  # a new file: the loaded library's pages stay as they are
    first.library_path.write_bytes(b"planted")
    cpu._compiled.clear()
    again = cpu.compile_c(source, "add_one")
    assert not again.from_cache and again.library_path.read_bytes() != b"planted"
