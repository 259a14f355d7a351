"""`cudasmith bench` on a folder of files, as a new user meets it: a misspelt task folder gets a
did-you-mean, the table names each kernel by its file and shows no column that says nothing, and a bench
run again reads its verdicts from the cache, counted against the kernels it holds."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import SOLUTIONS, run_cli

# Files named as a user names them: longer than the column Rich would give them at 80 columns.
FILES = {
    "a_kernel_that_adds_every_element.py": "vector_add_cpu.py",
    "b_kernel_that_forgets_the_tail.py": "vector_add_misses_tail.py",
}


def bench_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "solutions"
    (folder / "level1" / "vector_add").mkdir(parents=True)
    for name, solution in FILES.items():
        shutil.copy(SOLUTIONS / solution, folder / "level1" / "vector_add" / name)
    return folder


def test_a_misspelt_task_folder_alone_gets_a_did_you_mean(tmp_path: Path) -> None:
    (tmp_path / "level1" / "softmaxx").mkdir(parents=True)
    shutil.copy(SOLUTIONS / "vector_add_cpu.py", tmp_path / "level1" / "softmaxx" / "a.py")
    done = run_cli("bench", str(tmp_path), "--device", "cpu", "--store", str(tmp_path / "runs.db"))
    assert done.returncode == 2 and done.stdout == ""
    error = done.stderr.strip()
    assert error.startswith("error: ") and len(error.splitlines()) == 1, error
    assert f"{tmp_path / 'level1' / 'softmaxx'} is named after no built-in task" in error
    assert "did you mean level1/softmax" in error and "rename it" in error
    assert not (tmp_path / "runs.db").exists()


@pytest.fixture(scope="module")
def benched_twice(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], ...]:
    """A folder of two files for level1/vector_add benched, then benched again on the same store."""
    root = tmp_path_factory.mktemp("bench")
    folder = bench_folder(root)
    args = ("bench", str(folder), "--device", "cpu", "--no-timing", "--seeds", "1")
    first = run_cli(*args, "--store", str(root / "runs.db"))
    again = run_cli(*args, "--store", str(root / "runs.db"))
    return first, again


@pytest.mark.slow
def test_a_folders_bench_names_kernels_by_file_in_whole_rows(
    benched_twice: tuple[subprocess.CompletedProcess[str], ...],
) -> None:
    done = benched_twice[0]
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    title = next(i for i, line in enumerate(lines) if "under strict rules" in line)
    header = lines[title + 1].split()
    assert header[:2] == ["task", "file"], "a folder's kernels are named by their files"
    assert "sample" not in header and "claimed" not in header, "no columns that say nothing here"
    for name in FILES:
        row = next(line for line in lines if name in line)
        assert row.split()[:2] == ["level1/vector_add", name], row
    assert "…" not in done.stdout, "nothing is cut when written to a file or pipe"


@pytest.mark.slow
def test_verdicts_read_from_the_cache_count_against_the_kernels(
    benched_twice: tuple[subprocess.CompletedProcess[str], ...],
) -> None:
    again = benched_twice[1]
    assert again.returncode == 0, again.stderr
    counts = re.findall(r"\(cached verdict\) \((\d+) of (\d+) done, (\d+) left\)", again.stderr)
    assert sorted(counts) == [("1", "2", "1"), ("2", "2", "0")], again.stderr
    assert "0 verdicts given, 2 reused from the store's cache" in again.stdout
    lines = [line for line in again.stderr.splitlines() if line.strip()]
    assert all("(cached verdict)" in line for line in lines), "one line per verdict in a log"
