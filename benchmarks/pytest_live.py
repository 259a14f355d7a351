"""A pytest plugin for runs that may be cut off (benchmarks/gpu_session.py): each test's outcome and seconds
as it ends, and a failure's traceback at once, not in the summary a killed run never prints.

    python -m pytest -p pytest_live ...   # with benchmarks/ on PYTHONPATH
"""

from __future__ import annotations

import pytest

# The end of a failure's report kept: where it failed and why, not the whole stack.
TRACEBACK_LINES = 40


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" or report.outcome == "failed":
        print(f"\n[{report.outcome} {report.duration:.1f} s] {report.nodeid} ({report.when})", flush=True)
    if report.failed:
        lines = report.longreprtext.splitlines()
        print("\n".join(lines[-TRACEBACK_LINES:]), flush=True)
