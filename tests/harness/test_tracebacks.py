"""Tracebacks shown to a solution's author keep their file's frames and the error, not the judge's."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from cudasmith import evaluate
from cudasmith.harness.workers.tracebacks import solution_traceback

from conftest import SOLUTIONS


def _import(path: Path) -> None:
    """Import a file as the worker does: through importlib, several frames away from the file."""
    spec = importlib.util.spec_from_file_location("solution_under_test", path)
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))


def _raised(path: Path) -> BaseException:
    with pytest.raises(Exception) as caught:
        _import(path)
    return caught.value


def test_only_the_solutions_frames_and_the_error_remain(tmp_path: Path) -> None:
    solution = tmp_path / "solution.py"
    solution.write_text("import json\n\n\ndef broken():\n    return json.loads('{')\n\n\nbroken()\n")
    text = solution_traceback(_raised(solution), solution)
    assert text.startswith("Traceback (most recent call last):\n")
    assert f'File "{solution}", line 8, in <module>' in text
    assert f'File "{solution}", line 5, in broken' in text
    assert "json.decoder.JSONDecodeError: Expecting property name" in text
    assert "test_tracebacks.py" not in text and "importlib" not in text and "json/decoder.py" not in text


def test_a_syntax_error_keeps_its_line_and_caret(tmp_path: Path) -> None:
    solution = tmp_path / "solution.py"
    solution.write_text("class ModelNew(nn.Module)\n    pass\n")
    text = solution_traceback(_raised(solution), solution)
    assert "Traceback" not in text, "no frame of the solution ran"
    assert f'File "{solution}", line 1' in text and "^" in text and "SyntaxError: expected ':'" in text


def test_chained_exceptions_are_filtered_too(tmp_path: Path) -> None:
    solution = tmp_path / "solution.py"
    solution.write_text(
        "try:\n    {}['key']\nexcept KeyError as exc:\n    raise ValueError('no key') from exc\n"
    )
    text = solution_traceback(_raised(solution), solution)
    assert "KeyError: 'key'" in text and "ValueError: no key" in text
    assert "direct cause" in text and "importlib" not in text


def test_without_a_solution_the_whole_traceback_stays(tmp_path: Path) -> None:
    solution = tmp_path / "problem.py"
    solution.write_text("raise RuntimeError('reference broke')\n")
    assert "test_tracebacks.py" in solution_traceback(_raised(solution), None)


def test_a_c_compile_error_verdict_shows_the_solutions_line_not_the_judges() -> None:
    verdict = evaluate(SOLUTIONS / "c_compile_error.py", task="level1/vector_add", device="cpu", timing=False)
    traceback = verdict.artifacts["traceback"]
    assert verdict.status == "compile_error"
    assert 'c_compile_error.py", line 7, in <module>' in traceback
    assert "CompileError: gcc:" in traceback and "missing" in traceback
    assert "worker.py" not in traceback and "runtime/cpu.py" not in traceback
