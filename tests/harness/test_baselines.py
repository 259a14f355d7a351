"""Baselines beside eager PyTorch, their cache, % of speed of light, and times faster than physics."""

from __future__ import annotations

import pytest

from cudasmith import UsageError, evaluate
from cudasmith.harness.baselines import parse_baselines

from conftest import PROBLEMS, SOLUTIONS

ON_CPU = {"device": "cpu", "seeds_per_config": 1}


def test_baseline_names_are_checked_and_eager_always_comes_first() -> None:
    assert parse_baselines("expert, compile") == ("eager", "expert", "compile")
    assert parse_baselines("eager,eager") == ("eager",)
    with pytest.raises(UsageError, match="unknown baseline 'cudnn'"):
        parse_baselines("cudnn")


@pytest.mark.slow
def test_expert_is_timed_like_eager_in_the_session_each_time() -> None:
    problem = PROBLEMS / "add_with_expert.py"
    first = evaluate(SOLUTIONS / "vector_add_cpu.py", problem=problem, **ON_CPU)
    assert first.status == "correct", first.reason
    config = first.configs[0]
    assert set(config.baselines) == {"eager", "expert"}
    for entry in config.baselines.values():
        assert entry.time_ms and entry.time_ms > 0
        assert entry.speedup == pytest.approx(entry.time_ms / config.time_ms)
        assert entry.method == "perf_counter"
        assert entry.measured.startswith("in this session") and entry.measured_at
    assert set(first.speedups) == {"eager", "expert"} and first.speedups["eager"] == first.speedup
    assert first.timing and first.timing.l2_state == "cold" and first.timing.launch == "queued"
    assert config.roofline and config.roofline.bytes == 3 * 4 * 100_003 and config.sol_pct > 0
    assert first.peaks and first.peaks.kind == "cpu"
    again = evaluate(SOLUTIONS / "vector_add_cpu.py", problem=problem, **ON_CPU)
    later = again.configs[0].baselines["expert"]
    # Timed again in the new session; the earlier session's time is shown beside it, never used.
    assert later.measured_at >= config.baselines["expert"].measured_at
    previous = later.previous_session.time_ms if later.previous_session else None
    assert previous in (None, config.baselines["expert"].time_ms)


@pytest.mark.slow
def test_a_time_under_the_roofline_floor_is_rejected_as_impossible() -> None:
    verdict = evaluate(
        SOLUTIONS / "vector_add_cpu.py", problem=PROBLEMS / "add_claims_a_terabyte.py", **ON_CPU
    )
    assert verdict.status == "rejected"
    assert "under the roofline floor" in verdict.reason and "impossible" in verdict.reason
    assert any("eager PyTorch" in note and "peaks look underestimated" in note for note in verdict.notes)


def test_graph_timing_needs_a_gpu() -> None:
    with pytest.raises(UsageError, match="needs a GPU"):
        evaluate(SOLUTIONS / "vector_add_cpu.py", task="level1/vector_add", graph=True, **ON_CPU)
    with pytest.raises(UsageError, match="--l2 must be cold or hot"):
        evaluate(SOLUTIONS / "vector_add_cpu.py", task="level1/vector_add", l2_state="lukewarm", **ON_CPU)
