"""Screen, then confirm, as a search runs it (harness/confirm.py): `optimize` screens by default and tells each
session the run's best confirmed speedup; `--confirm-all` turns screening off; a screened verdict keeps no
time in the store, is never reused from the cache, ranks by its screened speedup and is never reported as
a confirmed one. The judge here is scripted; tests/harness/test_confirm.py judges for real."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import TracebackType
from typing import ClassVar

from rich.console import Console

from cudasmith.harness.options import EvalOptions
from cudasmith.harness.verdict import ConfigResult, Verdict
from cudasmith.harness.wire.results import ScreenReport
from cudasmith.harness.wire.status import Status
from cudasmith.llm import load_llm_config
from cudasmith.report.optimize_view import print_summary
from cudasmith.search.config import OptimizeConfig, SearchSettings
from cudasmith.search.optimize import optimize
from cudasmith.search.strategies.base import SearchCandidate, best
from cudasmith.store import RunStore
from cudasmith.store.metrics import Attempt, screened_only, screened_speedup_of, speedup_of
from cudasmith.store.summary import RunSummary, summarize
from cudasmith.tasks.problem import Problem
from cudasmith.timing.protocol import SCREEN_MARGIN

from conftest import PROBLEMS


class ScreeningJudge:
    """Judges by what a solution says: `VERDICT = "correct 1.5"` (confirmed at 1.5x) or `"screened 0.6"`
    (screened at 0.6x, not confirmed); it records the options it was opened with and every bar raised."""

    margins: ClassVar[list[float | None]] = []
    bars: ClassVar[list[float]] = []
    judged: ClassVar[list[str]] = []

    def __init__(self, problem: Problem, options: EvalOptions) -> None:
        self.problem = problem
        ScreeningJudge.margins.append(options.confirm_margin)

    def __enter__(self) -> ScreeningJudge:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None

    def raise_bar(self, speedup: float) -> None:
        ScreeningJudge.bars.append(speedup)

    def judge(self, path: Path) -> Verdict:
        source = path.read_text()
        ScreeningJudge.judged.append(source)
        kind, speed = re.search(r'VERDICT = "(\w+) ([\d.]+)"', source).groups()  # type: ignore[union-attr]
        value = float(speed)
        config = ConfigResult(0, {"n": 8}, False, Status.CORRECT)
        verdict = Verdict(
            Status.CORRECT, f"scripted {kind}", self.problem.name, str(path), "cpu", configs=[config]
        )
        if kind == "screened":
            config.screened_ms = 1.0 / value
            verdict.screen = ScreenReport(value, value, 1.5, SCREEN_MARGIN, confirmed=False)
        else:
            config.time_ms, config.speedup = 1.0 / value, value
            verdict.speedup, verdict.speedups = value, {"eager": value}
        return verdict


def answer(kind: str, speed: float, tag: str) -> str:
    return f'```python\nimport torch\nVERDICT = "{kind} {speed}"\n# {tag}\nclass ModelNew(torch.nn.Module):\n    pass\n```'


def run(tmp_path: Path, answers: list[str], **config: object) -> RunSummary:
    recording = tmp_path / f"answers{len(list(tmp_path.glob('answers*')))}.jsonl"
    recording.write_text("".join(json.dumps(a) + "\n" for a in answers))
    search = OptimizeConfig(strategy="fsr", n=1, depth=len(answers), patience=len(answers), **config)
    settings = SearchSettings(search=search, judge=EvalOptions(device="cpu"), llm=load_llm_config())
    result = optimize(
        PROBLEMS / "add_small.py",
        f"replay:{recording}",
        settings,
        store=tmp_path / "runs.db",
        judge_factory=ScreeningJudge,
    )
    return result.summary


def reset() -> None:
    ScreeningJudge.margins, ScreeningJudge.bars, ScreeningJudge.judged = [], [], []


def test_optimize_screens_by_default_and_tells_the_judge_the_runs_best(tmp_path: Path) -> None:
    reset()
    summary = run(
        tmp_path, [answer("correct", 1.5, "a"), answer("screened", 0.6, "b"), answer("correct", 1.4, "c")]
    )
    assert ScreeningJudge.margins and set(ScreeningJudge.margins) == {SCREEN_MARGIN}
    assert 1.5 in ScreeningJudge.bars, "after the first verdict, the run's best goes with each candidate"
    assert summary.best_speedup == 1.5 and summary.screened == 1
    with RunStore(tmp_path / "runs.db") as store:
        records = store.candidates(summary.run_id)
        screened = [r for r in records if r.verdict and screened_only(r.verdict)]
        assert len(screened) == 1
        assert speedup_of(screened[0].verdict) is None and screened_speedup_of(screened[0].verdict) == 0.6
        verdicts = store.verdicts(summary.run_id)
        assert sorted(v.speedup is None for v in verdicts) == [False, False, True], "no time in the store"
        figures = summarize([Attempt("t", r.verdict) for r in records if r.verdict])
        assert figures.screened == 1 and figures.baselines["eager"].timed == 2


def test_confirm_all_turns_screening_off(tmp_path: Path) -> None:
    reset()
    run(tmp_path, [answer("correct", 1.5, "a")], confirm_all=True)
    assert ScreeningJudge.margins == [None]


def test_a_screened_verdict_is_judged_again_in_another_run_and_a_confirmed_one_is_not(tmp_path: Path) -> None:
    reset()
    answers = [answer("correct", 1.5, "a"), answer("screened", 0.6, "b")]
    run(tmp_path, answers)
    second = run(tmp_path, answers)
    assert len(ScreeningJudge.judged) == 3 and ScreeningJudge.judged[-1] == ScreeningJudge.judged[1]
    assert second.counts.cached == 1


def test_a_screened_candidate_ranks_by_its_screen_and_is_never_shown_as_a_time() -> None:
    confirmed_slow = _candidate(1, confirmed=0.8)
    screened_faster = _candidate(2, screened=0.9)
    screened_slower = _candidate(3, screened=0.5)
    assert best([confirmed_slow, screened_slower]) is confirmed_slow, "a screen is not taken for 1x"
    assert best([confirmed_slow, screened_faster]) is screened_faster
    assert screened_faster.speedup is None and screened_faster.screened_speedup == 0.9
    assert confirmed_slow.screened_speedup is None


def test_a_run_whose_best_was_only_screened_says_so(tmp_path: Path) -> None:
    reset()
    summary = run(tmp_path, [answer("screened", 0.6, "a"), answer("screened", 0.5, "b")])
    assert summary.best_speedup is None
    assert summary.best is not None and summary.best.screened_speedup == 0.6
    console = Console(record=True, width=200)
    print_summary(summary, console)
    assert "screened: 0.60x eager PyTorch, not confirmed" in console.export_text()


def _candidate(cid: int, confirmed: float | None = None, screened: float | None = None) -> SearchCandidate:
    config = ConfigResult(0, {"n": 8}, False, Status.CORRECT)
    verdict = Verdict(Status.CORRECT, "", "t", f"{cid}.py", "cpu", configs=[config], speedup=confirmed)
    if screened is not None:
        verdict.screen = ScreenReport(screened, screened, 1.0, SCREEN_MARGIN, confirmed=False)
    return SearchCandidate(cid, "p", 0, "op", verdict=verdict)
