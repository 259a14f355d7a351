"""Usage errors as a new user meets them: found before torch is imported, so that they come at once
rather than after the seconds importing it takes; one line in one style, naming the flag; the user's own
path. Each command runs here where importing torch fails: an error found after that import would read
"a package is missing: torch" instead of its own words."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudasmith.device import NO_GPU_ERROR

from conftest import SOLUTIONS

SOLUTION = str(SOLUTIONS / "vector_add_cpu.py")
# A `torch` found before the installed one, which cannot be imported.
NO_TORCH = "raise ImportError('torch was imported before the arguments were checked')\n"


@pytest.fixture(scope="module")
def no_torch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding a `torch` that cannot be imported, and no settings file."""
    folder = tmp_path_factory.mktemp("no-torch")
    (folder / "torch").mkdir()
    (folder / "torch" / "__init__.py").write_text(NO_TORCH)
    return folder


def usage_error(folder: Path, *args: str, **env: str) -> str:
    """The one line `cudasmith ARGS` writes, without torch, where it stops with exit code 2."""
    foreign = ("OPENAI_", "ANTHROPIC_", "CUDASMITH_CONFIG", "CUDASMITH_STORE", "PYTHONPATH")
    environment = {k: v for k, v in os.environ.items() if not k.startswith(foreign)}
    environment.update({"PYTHONPATH": str(folder), "OPENAI_API_KEY": "sk-test", **env})
    done = subprocess.run(
        [sys.executable, "-m", "cudasmith", *args],
        capture_output=True,
        text=True,
        cwd=folder,
        env={k: v for k, v in environment.items() if v != "(unset)"},
        timeout=120,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == "", done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "torch" not in lines[0], "found before torch was imported"
    return lines[0].removeprefix("error: ")


def test_help_needs_no_torch(no_torch: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cudasmith", "eval", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(no_torch)},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and "SOLUTION" in done.stdout, done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["eval", SOLUTION, "-t", "level1/relu", "-d", "tpu"], "--device must be 'cuda', 'cuda:N' or 'cpu', not 'tpu'"),
        (["eval", SOLUTION, "-d", "cpu"], "give exactly one of a task name (--task) or a problem file (--problem)"),
        (["eval", SOLUTION, "-t", "level1/relu", "-d", "cpu", "--seeds", "0"], "--seeds must be at least 1"),
        (["eval", SOLUTION, "-t", "level1/relu", "-d", "cpu", "--rules", "loose"], "--rules must be strict or kernelbench, not 'loose'"),
        (["eval", SOLUTION, "-t", "level1/reluu", "-d", "cpu"], "unknown task 'level1/reluu'; did you mean level1/relu"),
        (["eval", SOLUTION, "-p", "nowhere.py", "-d", "cpu"], "problem file not found: nowhere.py"),
        (["ask", "level1/softmax", "-m", "fake", "-d", "cpu"], "--model 'fake' must be PROVIDER:MODEL"),
        (["ask", "level1/softmax", "-m", "openai:gpt-5-mini", "-n", "0", "-d", "cpu"], "-n must be at least 1, not 0"),
        (["ask", "level1/softmaxx", "-d", "cpu"], "unknown task 'level1/softmaxx'; did you mean level1/softmax"),
        (["optimize", "level1/softmax", "-m", "openai:x", "--depth", "0", "-d", "cpu"], "--depth must be at least 1, not 0"),
        (["optimize", "-t", "level1/softmaxx", "-m", "openai:x", "-d", "cpu"], "unknown task 'level1/softmaxx'"),
        (["optimize", "level1/softmax", "-m", "nobody:x", "-d", "cpu"], "unknown model provider 'nobody'"),
        (["bench", "-m", "fake", "--level", "level1", "-d", "cpu"], "--model 'fake' must be PROVIDER:MODEL"),
        (["bench", "-m", "openai:x", "-t", "level1/softmaxx", "-d", "cpu"], "unknown task 'level1/softmaxx'"),
        (["bench", "nowhere", "-d", "cpu"], "solution folder not found: nowhere"),
        (["show", "level1/softmaxx"], "unknown task 'level1/softmaxx'; did you mean level1/softmax"),
        (["prompt", "-t", "level1/softmaxx"], "unknown task 'level1/softmaxx'"),
        (["device", "-d", "tpu"], "--device must be 'cuda', 'cuda:N' or 'cpu', not 'tpu'"),
    ],
)  # fmt: skip
def test_a_usage_error_comes_before_torch(no_torch: Path, args: list[str], message: str) -> None:
    assert message in usage_error(no_torch, *args)


def test_no_gpu_is_told_before_torch(no_torch: Path) -> None:
    for args in (["eval", SOLUTION, "-t", "level1/relu"], ["show", "level1/relu", "-d", "cuda"]):
        assert usage_error(no_torch, *args, CUDA_VISIBLE_DEVICES="") == NO_GPU_ERROR


def test_a_missing_key_is_told_before_torch(no_torch: Path) -> None:
    error = usage_error(
        no_torch, "ask", "level1/relu", "-m", "openai:gpt-5-mini", "-d", "cpu", OPENAI_API_KEY="(unset)"
    )
    assert error.startswith("openai:gpt-5-mini: no API key: set OPENAI_API_KEY")


def test_a_file_that_is_no_python_is_refused_by_its_own_name(no_torch: Path) -> None:
    notes = no_torch / "notes.txt"
    notes.write_text((SOLUTIONS / "vector_add_cpu.py").read_text())
    error = usage_error(no_torch, "eval", "notes.txt", "-t", "level1/relu", "-d", "cpu")
    assert error == "notes.txt is not a Python file: a solution is a .py file that defines ModelNew"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["eval"], "missing argument 'SOLUTION' ("),
        (["eval", SOLUTION, "--seeds", "many"], "invalid value for '--seeds': "),
        (["evall"], "no such command 'evall'; did you mean 'eval'?"),
        (["eval", SOLUTION, "--sedes", "3"], "no such option: --sedes"),
    ],
)
def test_the_command_lines_own_errors_are_one_line_not_a_box(
    no_torch: Path, args: list[str], message: str
) -> None:
    error = usage_error(no_torch, *args)
    assert error.startswith(message) and "╭" not in error
