"""The fixed batch of candidate solutions in benchmarks/candidates (used by benchmarks/throughput.py and
the optimize checks): every file is listed in EXPECTED.json with a status its docstring repeats, names a
built-in task, parses, passes the static screen, and its NVRTC kernels compile (no GPU needed).

Candidate code is never imported here: NVRTC sources are read from the syntax tree, so a load_inline
candidate does not start a 45 s build and a Triton one does not need Triton.
"""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path

import pytest

from cudasmith.harness.wire.status import STATUSES
from cudasmith.harness.witnesses.screen import screen
from cudasmith.tasks import list_task_names

from conftest import ROOT

CANDIDATES = ROOT / "benchmarks" / "candidates"
EXPECTED: dict[str, str] = json.loads((CANDIDATES / "EXPECTED.json").read_text())
FILES = sorted(str(p.relative_to(CANDIDATES)) for p in CANDIDATES.rglob("*.py"))
HAS_NVRTC = importlib.util.find_spec("cuda.bindings") is not None
# Hopper, the GPUs the batch is run on; NVRTC compiles for it without one.
ARCH = "sm_90a"


def _task(relative: str) -> str:
    return str(Path(relative).parent)


def nvrtc_kernels(source: str) -> list[tuple[str, str, list[str]]]:
    """(source, kernel name, options) of every `compile_cuda(SOURCE, "name", options=[...])` call, with
    SOURCE a module-level string literal, as the batch writes them."""
    tree = ast.parse(source)
    strings = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name) and isinstance(node.value.value, str)
    }
    kernels = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "compile_cuda":
            code, name = node.args[0], node.args[1]
            text = strings[code.id] if isinstance(code, ast.Name) else ast.literal_eval(code)
            options = {k.arg: ast.literal_eval(k.value) for k in node.keywords}.get("options", [])
            kernels.append((text, ast.literal_eval(name), list(options)))
    return kernels


def test_expected_lists_every_candidate_and_nothing_else() -> None:
    assert sorted(EXPECTED) == FILES
    assert set(EXPECTED.values()) <= set(STATUSES)
    tasks = set(list_task_names())
    assert {_task(f) for f in FILES} <= tasks, "a folder that is not a built-in task"


def test_the_batch_has_what_throughput_needs() -> None:
    sources = {f: (CANDIDATES / f).read_text() for f in FILES}
    correct = [f for f in FILES if EXPECTED[f] == "correct"]
    assert len({_task(f) for f in FILES}) >= 6
    assert sum("load_inline(" in s for s in sources.values()) >= 2
    assert sum("import triton" in sources[f] for f in correct) >= 3
    assert sum(bool(nvrtc_kernels(sources[f])) for f in correct) >= 3
    assert list(EXPECTED.values()).count("incorrect") >= 3
    assert "timeout" in EXPECTED.values() and "runtime_error" in EXPECTED.values()
    per_task = [_task(f) for f in correct]
    assert max(per_task.count(t) for t in per_task) >= 3, "one task needs honest kernels of several speeds"


@pytest.mark.parametrize("relative", FILES)
def test_candidate_parses_says_its_verdict_and_passes_the_screen(relative: str) -> None:
    source = (CANDIDATES / relative).read_text()
    tree = ast.parse(source)
    docstring = ast.get_docstring(tree) or ""
    assert f"Expected verdict: {EXPECTED[relative]}" in docstring
    assert any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body)
    assert screen(source) is None


@pytest.mark.skipif(not HAS_NVRTC, reason="needs cuda-python (pip install 'cudasmith[cuda]')")
@pytest.mark.parametrize("relative", [f for f in FILES if "compile_cuda(" in (CANDIDATES / f).read_text()])
def test_nvrtc_kernels_compile(relative: str) -> None:
    from cudasmith.runtime import compile_cuda

    kernels = nvrtc_kernels((CANDIDATES / relative).read_text())
    assert kernels
    for source, name, options in kernels:
        compile_cuda(source, name, options=options, arch=ARCH)
