"""benchmarks/optimize_gpu.py --screening (optimize_screening.py) without a GPU: the replayed answers are the
no-build stream's variants of the task, every variant is named by its first line, and the comparison holds
only for the same best kernel (or a tie within the --confirm-all run's noise) found in less wall time."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from conftest import ROOT

BENCHMARKS = ROOT / "benchmarks"


@pytest.fixture(scope="module")
def screening() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield importlib.import_module("optimize_screening")
    finally:
        sys.path.remove(str(BENCHMARKS))


def run(wall_s: float, best: str, ranges: dict[str, list[float]]) -> dict[str, object]:
    return {"wall_s": wall_s, "best": best, "ranges": ranges, "requests_s": wall_s / 4}


def test_the_answers_are_the_tasks_variants_each_named_by_its_first_line(
    screening: ModuleType, tmp_path: Path
) -> None:
    sources = screening._variants("level1/softmax", tmp_path)
    assert len(sources) == 16 and len({screening._name(s) for s in sources}) == 16
    assert screening._name(sources[0]).startswith("1 of level1/softmax/cuda_online.py")
    with pytest.raises(SystemExit, match="no level1/relu"):
        screening._variants("level1/relu", tmp_path / "relu")


def test_screening_holds_for_the_same_best_or_a_tie_in_less_time(
    screening: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    everything = run(40.0, "a", {"a": [1.50, 1.56], "b": [1.52, 1.58], "c": [1.0, 1.1]})
    assert screening.verdict(run(30.0, "a", {}), everything) == 0
    assert "the same best kernel" in capsys.readouterr().out
    assert screening.verdict(run(30.0, "b", {}), everything) == 0, "b and a overlap in the full run"
    assert "a tie within noise" in capsys.readouterr().out
    assert screening.verdict(run(30.0, "c", {}), everything) == 1
    assert "a DIFFERENT best kernel" in capsys.readouterr().out
    assert screening.verdict(run(45.0, "a", {}), everything) == 1, "no time saved"


class Scripted:
    """A judge that reads its verdict from the solution: a confirmed speedup, or a screened one."""

    def __init__(self, problem: object, options: object) -> None:
        self.problem = problem
        self.margin = getattr(options, "confirm_margin", None)

    def __enter__(self) -> Scripted:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def judge(self, path: Path) -> object:
        from cudasmith.harness.verdict import ConfigResult, Verdict
        from cudasmith.harness.wire.results import ScreenReport, TimingReport
        from cudasmith.harness.wire.status import Status

        speed = float(path.read_text().split("SPEED = ")[1].split("\n")[0])
        verdict = Verdict(Status.CORRECT, "", "t", str(path), "cpu", configs=[ConfigResult(0, {}, False)])
        verdict.timing = TimingReport(
            "cold", "queued", held_s=2.0 if speed >= 1 or self.margin is None else 0.5
        )
        if self.margin is not None and speed < 1:
            verdict.screen = ScreenReport(speed, speed, 1.0, self.margin, confirmed=False)
        else:
            verdict.speedup, verdict.speedup_ci95 = speed, [speed * 0.99, speed * 1.01]
        return verdict


@pytest.mark.parametrize("mode", ["screening", "confirm-all"])
def test_a_search_once_reports_what_the_screen_did(screening: ModuleType, tmp_path: Path, mode: str) -> None:
    sources = [
        f"# Stream variant {i} of t/k.py (s{i})\nimport torch\nSPEED = {speed}\nclass ModelNew(torch.nn.Module):\n    pass\n"
        for i, speed in enumerate((1.2, 0.5, 1.5, 0.7), start=1)
    ]
    problem = ROOT / "tests" / "problems" / "add_small.py"
    found = screening.search_once(problem, sources, 0.0, mode, tmp_path, "cpu", Scripted)
    assert found["judged"] == 4 and found["best"] == "3 of t/k.py (s3)" and found["best_speedup"] == 1.5
    screened = 2 if mode == "screening" else 0
    assert (found["screened_only"], found["confirmed"]) == (screened, 4 - screened)
    assert found["held_s"] == (5.0 if mode == "screening" else 8.0)
