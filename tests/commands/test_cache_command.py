"""`cudasmith cache`: where the cache is and what each kind holds; clearing one kind or all, never by surprise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cudasmith.cli import app
from cudasmith.runtime.cache import cache_dir, cache_usage, clear_cache

from conftest import PROBLEMS, SOLUTIONS


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache with two compiled kernels and a baseline time."""
    monkeypatch.setenv("CUDASMITH_CACHE", str(tmp_path))
    (cache_dir("cpu") / "a.so").write_bytes(b"x" * 1000)
    (cache_dir("cpu") / "a.c").write_bytes(b"x" * 24)
    (cache_dir("baselines") / "b.json").write_text("{}")
    return tmp_path


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["cache", *args], env={"COLUMNS": "80"})
    return result.exit_code, result.stdout, result.stderr


def test_usage_counts_each_kind(cache: Path) -> None:
    sizes = {entry.kind: (entry.files, entry.bytes) for entry in cache_usage()}
    assert sizes == {
        "cuda": (0, 0),
        "cpu": (2, 1024),
        "extensions": (0, 0),
        "baselines": (1, 2),
        "device": (0, 0),
    }


def test_the_command_shows_where_and_how_much(cache: Path) -> None:
    code, out, _ = invoke()
    assert code == 0
    assert f"cache: {cache}" in out.replace("\n", "")
    assert any(line.split()[:3] == ["cpu", "2", "1.0"] for line in out.splitlines()), out
    assert "3 files, 1.0 KiB" in out
    document = json.loads(invoke("--json")[1])
    assert document["path"] == str(cache)
    assert {k["kind"]: k["files"] for k in document["kinds"]} == {
        "cuda": 0,
        "cpu": 2,
        "extensions": 0,
        "baselines": 1,
        "device": 0,
    }


def test_clearing_asks_for_yes_when_nobody_can_confirm(cache: Path) -> None:
    code, _, err = invoke("--clear")
    assert code == 2 and "needs --yes" in err and "Traceback" not in err
    assert sum(entry.files for entry in cache_usage()) == 3, "nothing was deleted"


def test_clearing_one_kind_keeps_the_others_and_the_folders(cache: Path) -> None:
    code, out, _ = invoke("--clear", "cpu", "--yes")
    assert code == 0 and "cleared the cpu cache: 1.0 KiB freed" in out
    sizes = {entry.kind: entry.files for entry in cache_usage()}
    assert sizes["cpu"] == 0 and sizes["baselines"] == 1
    assert (cache / "cpu").is_dir(), "a process compiling right now still has its folder"
    assert clear_cache() == 2 and sum(entry.files for entry in cache_usage()) == 0


def test_an_unknown_kind_is_a_usage_error(cache: Path) -> None:
    code, _, err = invoke("--clear", "kernels", "--yes")
    assert (
        code == 2 and "no cache kind 'kernels'; the kinds are cuda, cpu, extensions, baselines, device" in err
    )


@pytest.mark.slow
def test_a_judged_solutions_compile_c_library_is_where_the_cache_says(tmp_path: Path) -> None:
    """After an eval of a compile_c solution, `cache` finds its library in extensions/ and says so."""
    env = {**os.environ, "CUDASMITH_CACHE": str(tmp_path)}
    args = ["--problem", str(PROBLEMS / "add_small.py"), "--device", "cpu", "--no-timing", "--seeds", "1"]
    judged = subprocess.run(
        [sys.executable, "-m", "cudasmith", "eval", str(SOLUTIONS / "vector_add_cpu.py"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert judged.returncode == 0, judged.stderr
    libraries = list((tmp_path / "extensions").rglob("*.so"))
    assert libraries, "the solution's compile_c library is kept in its own folder under extensions/"
    listed = subprocess.run(
        [sys.executable, "-m", "cudasmith", "cache", "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    kinds = {k["kind"]: k for k in json.loads(listed.stdout)["kinds"]}
    assert kinds["extensions"]["files"] >= len(libraries) and "compile_c" in kinds["extensions"]["holds"]
    assert kinds["baselines"]["files"] == 0, "nothing timed, so no baseline kept"
    assert "kept only when timed quietly" in kinds["baselines"]["holds"], "and the table says when one is"
