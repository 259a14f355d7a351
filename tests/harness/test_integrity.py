"""The parent owns the truth: stored verdicts, seeds, cached measurements and build folders carry the
judge's MAC; whatever fails it is shown as tampered and never reused."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from cudasmith.errors import UsageError
from cudasmith.harness.options import EvalOptions
from cudasmith.harness.walls import sandbox
from cudasmith.harness.walls.scratch import Scratch, folder_intact, seal_folder, sweep_moved_aside
from cudasmith.runtime import seal
from cudasmith.store import CacheKey, RunStore
from cudasmith.store.runs import load_run

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


def _tamper(path: Path, field: str, factor: float) -> None:
    """Rewrite one number of a sealed measurement by hand, its MAC left as it was."""
    data = json.loads(path.read_text())
    data[field] *= factor
    path.write_text(json.dumps(data))


def test_device_peaks_that_fail_their_mac_are_measured_again_and_sealed_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Peaks rewritten by hand (x1000: every % of speed of light falls) are not loaded, and the next
    session measures them again (issue 28), caching the new measurement under a fresh MAC."""
    from cudasmith.device import DevicePeaks, load_peaks, save_peaks, software_versions, speed_of_light
    from cudasmith.hardware import device_name

    monkeypatch.setenv("CUDASMITH_CACHE", str(tmp_path))  # this CPU's peaks, not measured in other tests

    def peaks(bandwidth: float) -> DevicePeaks:
        return DevicePeaks(device_name("cpu"), "cpu", bandwidth, {"float32": 0.2}, {"float32": 0.3}, 2**25,
                           versions=software_versions())  # fmt: skip

    path = save_peaks(peaks(50.0))
    assert load_peaks("cpu") == peaks(50.0)
    _tamper(path, "memory_gb_per_s", 1000.0)
    assert load_peaks("cpu") is None
    measurements = [peaks(51.0), peaks(50.5), peaks(50.8)]
    monkeypatch.setattr(speed_of_light, "measure_peaks", lambda _device: measurements.pop(0))
    assert speed_of_light.ensure_peaks("cpu").memory_gb_per_s == 51.0
    assert measurements == [], "measured again, each repeat"
    assert load_peaks("cpu") == speed_of_light.ensure_peaks("cpu") == peaks(51.0), "cached again, sealed"


def test_a_sealed_document_opens_only_with_its_mac_and_purpose() -> None:
    assert seal.unseal(seal.seal({"median_ms": 1.0}, "baseline-time"), "baseline-time") == {"median_ms": 1.0}
    assert seal.unseal(seal.seal({"median_ms": 1.0}, "baseline-time"), "device-peaks") is None
    assert seal.unseal({"median_ms": 1.0, "mac": "0" * 64}, "baseline-time") is None


def test_a_launch_cost_that_fails_its_mac_is_calibrated_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The launch cost a timing plan adds to every GPU time: a forged one is calibrated again."""
    import torch

    from cudasmith.device import launch_cost, software_versions

    monkeypatch.setenv("CUDASMITH_CACHE", str(tmp_path))
    name = "NVIDIA H200 (test)"
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *_: name)
    monkeypatch.setattr(launch_cost, "_loaded", {})
    cost = launch_cost.LaunchCost(name, 0.74, 1.36, 0.62, versions=software_versions())
    path = launch_cost.save_launch_cost(cost)
    monkeypatch.setattr(launch_cost, "_loaded", {})
    _tamper(path, "launch_us", 100.0)
    calibrations = [launch_cost.LaunchCost(name, 0.75, 1.37, 0.62, versions=software_versions())]
    monkeypatch.setattr(launch_cost, "measure_launch_cost", lambda: calibrations.pop(0))
    assert launch_cost.ensure_launch_cost().launch_us == 0.75 and calibrations == []
    monkeypatch.setattr(launch_cost, "_loaded", {})
    assert launch_cost.load_launch_cost(name).launch_us == 0.75, "cached again, sealed"


def test_a_build_folder_changed_or_grown_after_its_seal_is_not_trusted(tmp_path: Path) -> None:
    """Only the worker that held a build folder wrote there, and it was sealed when that worker ended: a file
    added since, as much as one changed, was written by no worker of its solution."""
    folder = tmp_path / "build"
    (folder / "_cpu").mkdir(parents=True)
    (folder / "_cpu" / "kernel.so").write_bytes(b"library")
    assert not folder_intact(folder), "never sealed: not trusted"
    seal_folder(folder)
    assert folder_intact(folder)
    (folder / "_cpu" / "other.so").write_bytes(b"planted beside")
    assert not folder_intact(folder), "a file added after the seal"
    (folder / "_cpu" / "other.so").unlink()
    (folder / "_cpu" / "link.so").symlink_to(tmp_path / "elsewhere.so")
    assert not folder_intact(folder), "a link added"
    (folder / "_cpu" / "link.so").unlink()
    assert folder_intact(folder)
    (folder / "_cpu" / "kernel.so").write_bytes(b"planted")
    assert not folder_intact(folder)


def _solution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "builds"))
    solution = tmp_path / "solution.py"
    solution.write_text("from torch.utils.cpp_extension import load_inline\n")
    return solution


def test_a_worker_s_slot_takes_the_place_of_its_solution_s_build_folder_with_its_sealed_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parent gives each worker an empty slot before it starts (the only build folder its sandbox lets
    it write) and, once the solution is known, moves the solution's sealed files in and renames the slot
    into the folder's place: ninja finds its outputs where it left them, and no other worker writes there."""
    solution = _solution(tmp_path, monkeypatch)
    first = Scratch(tmp_path / "problem.py", "first")
    assert first.slot.is_dir() and str(first.slot) in first.policy.write
    _, folder = first.stage(solution, landlock=True)
    assert folder == first.build and folder.is_dir() and not first.slot.exists()
    (folder / "ext.so").write_bytes(b"built")
    second = Scratch(tmp_path / "problem.py", "second")
    try:
        _, elsewhere = second.stage(solution, landlock=True)
        assert elsewhere == second.slot, "held by the first worker: the second builds in its own slot"
    finally:
        second.remove()
    first.remove()
    assert folder_intact(folder), "sealed when its worker ended"
    third = Scratch(tmp_path / "problem.py", "third")
    try:
        _, taken = third.stage(solution, landlock=False)
        # Under a namespace the slot is a mount point of the worker's: renamed, its mount would be detached.
        assert taken == third.slot and not folder.exists(), "the slot keeps its name while its worker runs"
        assert (third.slot / "ext.so").read_bytes() == b"built"
        (third.slot / "more.so").write_bytes(b"built too")
    finally:
        third.remove()
    assert not third.slot.exists() and folder.stat().st_ino == third.slot_inode, (
        "the slot took the folder's place"
    )
    assert (folder / "more.so").read_bytes() == b"built too" and folder_intact(folder), "and was sealed"


def test_a_changed_build_folder_is_moved_aside_and_old_ones_are_swept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder changed after its seal is renamed (a process may have its libraries mapped) and the
    solution builds again; folders moved aside over an hour ago go when another is."""
    solution = _solution(tmp_path, monkeypatch)
    builder = Scratch(tmp_path / "problem.py", "builder")
    _, folder = builder.stage(solution, landlock=True)
    (folder / "ext.so").write_bytes(b"built")
    builder.remove()
    (folder / "ext.so").write_bytes(b"changed")
    old = folder.with_name(f".{folder.name}.changed-1-{1_000_000_000}")  # moved aside in 1970
    recent = folder.with_name(f".{folder.name}.changed-2-{time.time_ns()}")
    for aside in (old, recent):
        aside.mkdir()
    judged = Scratch(tmp_path / "problem.py", "judged")
    try:
        judged.stage(solution, landlock=True)
        moved = sorted(p.name for p in folder.parent.iterdir() if ".changed-" in p.name)
        assert not (folder / "ext.so").exists(), (
            "the changed folder is not trusted: the solution builds again"
        )
        assert old.name not in moved and recent.name in moved and len(moved) == 2, moved
        assert sweep_moved_aside(folder.parent, older_than_s=0.0) == 2
    finally:
        judged.remove()


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


def test_a_pinned_object_runs_what_its_class_held_when_it_was_pinned() -> None:
    from cudasmith.harness.workers.tamper import pin_methods

    class Checker:
        def check(self) -> str:
            return "the judge's"

    checker = Checker()
    pin_methods(checker)
    Checker.check = lambda self: "the candidate's"  # type: ignore[method-assign]
    assert checker.check() == "the judge's"
    assert Checker().check() == "the candidate's", "an object made afterwards is not pinned"
