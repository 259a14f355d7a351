"""benchmarks/serve_throughput.py's pieces without a GPU: the no-build stream has no torch extension in it,
the exploit table maps onto a request's options, and the report fails a ratio under the target, a status
that differs between the two ways, and a candidate judged wrongly."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from conftest import ROOT

BENCHMARKS = ROOT / "benchmarks"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield importlib.import_module("serve_throughput")
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_the_nobuild_stream_builds_no_extension_and_a_folder_is_read_as_expected(
    bench: ModuleType, tmp_path: Path
) -> None:
    stream = bench.load_candidates("nobuild", tmp_path)
    assert stream and all("load_inline" not in c.path.read_text() for c in stream)
    assert {c.task for c in stream} == {"level1/relu", "level1/softmax"}
    assert [c.task for c in stream] == sorted(c.task for c in stream), "task by task"
    batch = bench.load_candidates(str(BENCHMARKS / "candidates"), tmp_path)
    assert any(c.expected == "timeout" for c in batch) and all(c.path.is_file() for c in batch)


def test_the_exploit_table_becomes_the_same_options_both_ways(bench: ModuleType) -> None:
    cases = bench.exploit_cases()
    assert len(cases) >= 15 and all(path.is_file() for _, path, _, _ in cases)
    assert all("screen" not in options and options["device"] == "cuda" for _, _, _, options in cases)
    assert set().union(*(options for _, _, _, options in cases)) - {"device"} <= set(bench.REQUEST_NAMES)


def test_the_report_passes_only_a_ratio_over_the_target_with_every_status_agreeing(bench: ModuleType) -> None:
    candidates = [bench.Candidate("a.py", Path("a.py"), "level1/relu", "correct")]
    args = argparse.Namespace(device="cuda", baselines="eager", target=0.95, out=None)

    def approaches(status: str, wall_b: float) -> tuple[object, object]:
        return bench.Approach("a", {"a.py": "correct"}, 10.0), bench.Approach("b", {"a.py": status}, wall_b)

    assert bench.report(candidates, *approaches("correct", 10.4), [], args) == 0
    assert bench.report(candidates, *approaches("correct", 11.0), [], args) == 1, "under 95 %"
    assert bench.report(candidates, *approaches("incorrect", 10.0), [], args) == 1, "judged wrongly"
    differ = [{"exploit": "x", "solution": "x.py", "eval": "rejected", "server": "correct"}]
    assert bench.report(candidates, *approaches("correct", 10.0), differ, args) == 1
