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


def test_expert_is_timed_like_eager_and_both_are_cached() -> None:
    problem = PROBLEMS / "add_with_expert.py"
    first = evaluate(SOLUTIONS / "vector_add_cpu.py", problem=problem, **ON_CPU)
    assert first.status == "correct", first.reason
    config = first.configs[0]
    assert set(config.baselines) == {"eager", "expert"}
    for entry in config.baselines.values():
        assert entry["time_ms"] > 0 and entry["speedup"] == pytest.approx(entry["time_ms"] / config.time_ms)
        assert entry["method"] == "perf_counter"
    assert set(first.speedups) == {"eager", "expert"} and first.speedups["eager"] == first.speedup
    assert first.timing == {"l2_state": "cold", "launch": "queued"}
    assert config.roofline and config.roofline["bytes"] == 3 * 4 * 100_003 and config.sol_pct > 0
    assert first.peaks and first.peaks["kind"] == "cpu"
    again = evaluate(SOLUTIONS / "vector_add_cpu.py", problem=problem, **ON_CPU)
    assert all(entry["cached"] for entry in again.configs[0].baselines.values())
    assert again.configs[0].baselines["expert"]["time_ms"] == config.baselines["expert"]["time_ms"]
    fresh = evaluate(SOLUTIONS / "vector_add_cpu.py", problem=problem, baseline_cache=False, **ON_CPU)
    assert not any(entry["cached"] for entry in fresh.configs[0].baselines.values())


def test_a_time_under_the_roofline_floor_is_rejected_as_impossible() -> None:
    verdict = evaluate(
        SOLUTIONS / "vector_add_cpu.py", problem=PROBLEMS / "add_claims_a_terabyte.py", **ON_CPU
    )
    assert verdict.status == "rejected"
    assert "under the roofline floor" in verdict.reason and "impossible" in verdict.reason
    assert any("eager PyTorch" in note and "beats the roofline floor" in note for note in verdict.notes)


def test_graph_timing_needs_a_gpu() -> None:
    with pytest.raises(UsageError, match="needs a GPU"):
        evaluate(SOLUTIONS / "vector_add_cpu.py", task="level1/vector_add", graph=True, **ON_CPU)
    with pytest.raises(UsageError, match="L2 state"):
        evaluate(SOLUTIONS / "vector_add_cpu.py", task="level1/vector_add", l2_state="lukewarm", **ON_CPU)
