"""The no-build stream of throughput.py (benchmarks/stream_nobuild.py): at least 60 distinct NVRTC and Triton
kernels over at least three tasks, about a quarter wrong, each with the verdict it should get; every NVRTC
kernel compiles (no GPU needed) and every variant passes the static screen."""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from test_candidates import ARCH, nvrtc_kernels

from cudasmith.harness.witnesses.screen import screen

from conftest import ROOT

BENCHMARKS = ROOT / "benchmarks"
# What makes a variant new to every compile cache, and its first line: not what makes it a distinct kernel.
MARKS = re.compile(r"^# Stream variant .*\n|^\s*(//|#) stream variant \d+\n", re.MULTILINE)


@pytest.fixture(scope="module")
def stream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ModuleType, Path, dict[str, str]]]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        variants = importlib.import_module("stream_variants")
        out = tmp_path_factory.mktemp("nobuild")
        yield variants, out, variants.write_kind(out, "nobuild")
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_the_stream_is_long_mixed_a_quarter_wrong_and_builds_nothing(
    stream: tuple[ModuleType, Path, dict[str, str]],
) -> None:
    variants, out, expected = stream
    tasks = Counter(str(Path(name).parent) for name in expected)
    assert len(expected) >= 60 and len(tasks) >= 3
    wrong = sum(status != "correct" for status in expected.values())
    assert 0.2 <= wrong / len(expected) <= 0.3
    sources = {name: (out / name).read_text() for name in expected}
    kinds = Counter(importlib.import_module("throughput_report").kind_of(s) for s in sources.values())
    assert set(kinds) == {"nvrtc", "triton"} and min(kinds.values()) >= 20, kinds
    for task in tasks:
        first = next(name for name in expected if name.startswith(task + "/"))
        assert expected[first] == "correct", f"{task}'s first variant pays for its session's start"
    for name, source in sources.items():
        assert f"Expected verdict: {expected[name]}" in source and "class ModelNew" in source, name
        assert screen(source) is None, name
    assert variants.write_kind(out / "again", "nobuild") == expected, "the same every time"


def test_every_variant_is_a_distinct_kernel(stream: tuple[ModuleType, Path, dict[str, str]]) -> None:
    _, out, expected = stream
    kernels = Counter(MARKS.sub("", (out / name).read_text()) for name in expected)
    assert max(kernels.values()) == 1, "two variants differ only in their tags"


@pytest.mark.skipif(importlib.util.find_spec("cuda.bindings") is None, reason="needs cuda-python")
def test_the_streams_nvrtc_kernels_compile(stream: tuple[ModuleType, Path, dict[str, str]]) -> None:
    from cudasmith.runtime import compile_cuda

    _, out, expected = stream
    compiled = 0
    for name in expected:
        for source, kernel, options in nvrtc_kernels((out / name).read_text()):
            compile_cuda(source, kernel, options=options, arch=ARCH)
            compiled += 1
    assert compiled >= 30
