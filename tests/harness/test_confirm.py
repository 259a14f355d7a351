"""Screen, then confirm (harness/confirm.py): a search's short screen decides which correct candidates get the
full timing protocol. A screen pessimistic by up to the margin still confirms; a candidate that is not
confirmed has a screened speedup and no time, in its verdict and in its JSON."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudasmith.harness import timed as timed_module
from cudasmith.harness.confirm import BASELINE_BAR, ConfirmBar, Screened, decide
from cudasmith.harness.options import EvalOptions
from cudasmith.harness.session import Judge
from cudasmith.harness.verdict import Verdict
from cudasmith.harness.wire.results import Timing
from cudasmith.harness.wire.status import Status
from cudasmith.timing.protocol import SCREEN_MARGIN, TimingPlan, screen_plan

from conftest import PROBLEMS, ROOT, SOLUTIONS

MARGIN = 0.1


def screened(
    eager_ms: float, median_ms: float, low_ms: float | None = None, exclusive: bool = True
) -> Screened:
    """One config's screen: its median and the low end of its interval (the median itself by default)."""
    low = median_ms if low_ms is None else low_ms
    timing = Timing(median_ms, [low, median_ms * 1.01], 0.01, 5, "test")
    return Screened(eager_ms, timing, exclusive)


@pytest.mark.parametrize("pessimism", [0.0, MARGIN / 2, MARGIN * 0.999])
def test_a_candidate_whose_screen_was_pessimistic_by_up_to_the_margin_is_still_confirmed(
    pessimism: float,
) -> None:
    """Its true time ties the run's best (1.5x eager); its screen came out slower by `pessimism` on every
    config, with no spread to help it: it still gets the full protocol, which would make it the best."""
    best, eager = 1.5, [3.0, 0.2, 40.0]
    screens = [screened(ms, ms / best * (1 + pessimism)) for ms in eager]
    report = decide(screens, best, MARGIN)
    assert report.confirmed
    assert report.speedup == pytest.approx(best / (1 + pessimism))


def test_a_screen_beyond_the_margin_is_not_confirmed_unless_its_own_spread_reaches() -> None:
    best, eager = 1.5, [3.0, 0.2]
    slow = [ms / best * (1 + MARGIN) * 1.05 for ms in eager]
    report = decide([screened(e, s) for e, s in zip(eager, slow, strict=True)], best, MARGIN)
    assert not report.confirmed and report.reach == pytest.approx(report.speedup)
    # The same medians with a screen whose interval reaches 10 % lower: within its spread, it could tie.
    spread = [screened(e, s, s * 0.9) for e, s in zip(eager, slow, strict=True)]
    assert decide(spread, best, MARGIN).confirmed


def test_a_shared_screen_window_decides_nothing() -> None:
    report = decide([screened(1.0, 100.0, exclusive=False)], 1.0, MARGIN)
    assert report.confirmed and "shared" in report.why


def test_the_bar_starts_at_the_baseline_and_only_rises() -> None:
    bar = ConfirmBar()
    assert bar() == BASELINE_BAR
    bar.raise_to(0.5)
    bar.raise_to(None)
    assert bar() == BASELINE_BAR, "a kernel slower than eager does not lower the bar"
    bar.raise_to(2.0)
    bar.raise_to(1.2)
    assert bar() == 2.0


def test_the_screen_is_a_few_milliseconds_beside_the_same_plan() -> None:
    plan = TimingPlan(l2_state="hot", launch="graph", launch_us=2.5)
    short = screen_plan(plan)
    assert (short.l2_state, short.launch, short.launch_us) == ("hot", "graph", 2.5)
    assert short.min_sampling_s < plan.min_sampling_s / 10 and short.max_seconds < plan.max_seconds / 10
    assert 0 < SCREEN_MARGIN < 1


def test_the_margin_is_an_option_of_the_judge() -> None:
    with pytest.raises(Exception, match="margin"):
        EvalOptions(device="cpu", confirm_margin=0.0).validate()
    EvalOptions(device="cpu", confirm_margin=SCREEN_MARGIN).validate()


# Eager PyTorch's own sum a hundred times a call (PyTorch compute is allowed under the kernelbench rules):
# a hundred times slower than the baseline, however loaded the machine.
SLOW = """from torch import nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        for _ in range(100):
            out = a + b
        return out
"""


def _options() -> EvalOptions:
    return EvalOptions(
        device="cpu", seeds_per_config=1, baselines=("eager",), confirm_margin=MARGIN, rules="kernelbench"
    )


@pytest.mark.slow
def test_a_slow_candidate_is_screened_and_not_confirmed_and_has_no_time(tmp_path: Path) -> None:
    slow = tmp_path / "slow.py"
    slow.write_text(SLOW)
    with Judge(PROBLEMS / "add_small.py", _options(), candidates=1) as judge:
        verdict = judge.judge(slow)
    assert verdict.status == Status.CORRECT and verdict.screened_only
    assert verdict.screen is not None and verdict.screen.speedup is not None and verdict.screen.speedup < 0.5
    assert "screened: " in verdict.reason and "not confirmed" in verdict.reason
    assert verdict.speedup is None and verdict.speedups == {}
    config = verdict.configs[0]
    assert config.time_ms is None and config.speedup is None and config.screened_ms
    assert config.checked_calls == 0, "nothing was timed by the full protocol"
    again = Verdict.from_dict(verdict.to_dict())
    assert again.screened_only and again.screen == verdict.screen


@pytest.mark.slow
def test_a_confirmed_candidate_gets_the_full_protocol_and_raises_the_bar(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whatever the CPU's speed: the decision is made to confirm, and the session's bar rises to the time."""
    decided: list[float] = []

    def confirm(screens: list[Screened], bar: float, margin: float, seconds: float = 0.0):  # type: ignore[no-untyped-def]
        decided.append(bar)
        report = decide(screens, bar, margin, seconds)
        report.confirmed = True
        return report

    monkeypatch.setattr(timed_module, "decide", confirm)
    with Judge(PROBLEMS / "add_small.py", _options(), candidates=1) as judge:
        judge.raise_bar(0.25)  # below the baseline: the bar stays at 1x
        verdict = judge.judge(SOLUTIONS / "vector_add_cpu.py")
        bar = judge.bar()
    assert decided == [BASELINE_BAR]
    assert verdict.status == Status.CORRECT and not verdict.screened_only
    assert verdict.speedup is not None and verdict.configs[0].time_ms and verdict.configs[0].screened_ms
    assert verdict.configs[0].checked_calls > 0, "the full protocol re-checks timed outputs"
    assert "confirmed" in verdict.reason
    assert bar == max(BASELINE_BAR, verdict.speedup)
    phases = verdict.configs[0].timing.phases_s if verdict.configs[0].timing else {}
    assert {"warmup", "sampling", "inputs", "export", "request", "recheck"} <= set(phases)
    assert verdict.timing is not None and verdict.timing.requests_s > 0 and verdict.timing.held_s > 0


@pytest.mark.gpu
def test_on_a_gpu_a_one_block_kernel_is_screened_out_and_a_full_grid_one_is_timed_when_confirmed() -> None:
    """The screen's short plan on the GPU's sampler (CUPTI spans read at its first checkpoint): a kernel of one
    block of threads over 50 million elements is far slower than eager PyTorch and is not confirmed; the
    full-grid one is screened, and its verdict has a time exactly when the screen confirmed it."""
    kernels = ROOT / "benchmarks" / "optimize_gpu_kernels"
    options = EvalOptions(
        device="cuda", seeds_per_config=1, baselines=("eager",), confirm_margin=SCREEN_MARGIN
    )
    with Judge(task="level1/vector_add", options=options, candidates=2) as judge:
        slow, fast = judge.judge_many([kernels / "one_block.py", kernels / "full_grid.py"])
    assert slow.status == Status.CORRECT and slow.screened_only and "not confirmed" in slow.reason
    assert all(c.screened_ms and c.time_ms is None for c in slow.configs)
    assert fast.status == Status.CORRECT and fast.screen is not None
    assert all(c.screened_ms for c in fast.configs)
    assert (fast.speedup is not None) == fast.screen.confirmed
