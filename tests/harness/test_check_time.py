"""A config's check time, estimated before it starts from its bytes and the device's measured bandwidth:
announced past a minute, skipped past the limit, refused where it must run; and the same through `eval`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cudasmith.errors import UsageError
from cudasmith.harness.check_time import ANNOUNCE_S, CHECK_PASSES, estimate, within_time
from cudasmith.harness.options import EvalOptions
from cudasmith.harness.wire.results import ConfigDescription
from cudasmith.tasks.problem import load_problem

from conftest import PROBLEMS, SOLUTIONS, slow_memory

GB = 10**9
PROBLEM = PROBLEMS / "add_small.py"


def described(size: float) -> ConfigDescription:
    """A config of `size` bytes: two thirds inputs, one third output."""
    return ConfigDescription(input_bytes=int(size * 2 / 3), output_bytes=int(size / 3))


def test_the_estimate_grows_with_the_bytes_and_shrinks_with_the_bandwidth() -> None:
    one = estimate(described(1.28 * GB), 8, "cpu", 10.0)
    assert one is not None and one.measured
    assert one.seconds == pytest.approx(8 * CHECK_PASSES["cpu"] * 1.28 * GB / (10.0 * GB), rel=1e-3)
    twice = estimate(described(2.56 * GB), 8, "cpu", 10.0)
    faster = estimate(described(1.28 * GB), 8, "cpu", 20.0)
    assert twice is not None and twice.seconds == pytest.approx(2 * one.seconds, rel=1e-3)
    assert faster is not None and faster.seconds == pytest.approx(one.seconds / 2, rel=1e-3)
    unmeasured = estimate(described(1.28 * GB), 8, "cpu", None)
    assert unmeasured is not None and not unmeasured.measured and "assumed" in unmeasured.describe()
    assert estimate(ConfigDescription(), 8, "cpu", 10.0) is None, "a size the reference could not tell"


def test_long_configs_are_announced_skipped_or_refused_by_the_limit() -> None:
    problem = load_problem(PROBLEMS / "add_small.py")
    options = EvalOptions(device="cpu", config_time_limit_s=600.0)
    configs = [(0, {"n": 1}, False), (1, {"n": 2}, False), (2, {"n": 3}, False)]
    # At 1 GB/s, 4 input sets: ~1.2 s, ~100 s (announced), ~1000 s (past the limit: skipped).
    per_second = 1e9 / (4 * CHECK_PASSES["cpu"])
    sizes = [described(per_second * seconds) for seconds in (1.2, 100, 1000)]
    kept, skipped, announced = within_time(problem, configs, sizes, options, 1.0)
    assert [index for index, _, _ in kept] == [0, 1]
    assert [s.index for s in skipped] == [2] and "--config-time-limit 1000 judges it" in skipped[0].reason
    assert len(announced) == 1 and announced[0].startswith("config 1 {'n': 2}: checking it will take about")
    assert ANNOUNCE_S < 100
    # The smallest config must run: past the limit, the session is refused, naming the flag.
    with pytest.raises(
        UsageError,
        match=r"config 0 .* is too large for this device: .* --config-time-limit 1000 judges it anyway",
    ):
        within_time(problem, configs[:1], sizes[2:], options, 1.0)


def _eval(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """`eval` of a correct kernel on add_small (786 KB a config), where peaks measured a bandwidth of
    10 MB/s: its check is estimated at minutes."""
    env = slow_memory(tmp_path)
    args = [str(SOLUTIONS / "vector_add_cpu.py"), "--problem", str(PROBLEM), "--device", "cpu", "--no-timing"]
    return subprocess.run(
        [sys.executable, "-m", "cudasmith", "eval", *args, "--seeds", "1", *extra],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )


def test_eval_refuses_a_config_past_the_limit_before_checking_it(tmp_path: Path) -> None:
    done = _eval(tmp_path, "--config-time-limit", "30")
    assert done.returncode == 2 and done.stdout == "", done.stderr
    [error] = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert error.startswith(
        "error: config 0 {'n': 65537} is too large for this device: checking it would take"
    )
    assert "at 0.01 GB/s measured" in error and error.endswith("judges it anyway")
    assert "--config-time-limit" in error and "checking config" not in done.stderr, "nothing was checked"


@pytest.mark.slow
def test_eval_announces_a_long_check_before_it_starts(tmp_path: Path) -> None:
    done = _eval(tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    [warning] = [i for i, line in enumerate(lines) if line.startswith("warning: config 0 {'n': 65537}: ")]
    assert "checking it will take about" in lines[warning]
    assert warning < next(i for i, line in enumerate(lines) if "checking config 0" in line), (
        "before, not after"
    )
    notes = json.loads(done.stdout)["notes"]
    assert any(note.startswith("config 0 {'n': 65537}: checking it will take about") for note in notes)
