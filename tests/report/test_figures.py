"""The report's plots say what they show: speedups on a log axis labelled 0.1, 0.2, 0.5, 1, 2, 5… and
fitted to the data, one line when nothing was rejected, and a note where points sit above a memory roof."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

# Plotly draws the HTML report's plots: a dependency of the package, but a machine that only judges
# (the GPU machines) may lack it, and there these tests are skipped rather than failing to collect.
pytest.importorskip("plotly", reason="the report's plots need plotly (a dependency of cudasmith)")

import plotly.graph_objects as go

from cudasmith.report.figures import (
    ABOVE_THE_ROOF,
    roofline_figure,
    speedup_axis,
    speedup_per_task_figure,
    status_figure,
)
from cudasmith.store import RunStore
from cudasmith.store.runs import RunView, load_run

from stored_runs import bench_of_files, search


def notes(figure: go.Figure | None) -> list[str]:
    """The notes written on a figure, as plain text."""
    assert figure is not None
    return [" ".join(a.text.split("<br>")) for a in figure.layout.annotations]


@pytest.fixture
def views(tmp_path: Path) -> tuple[RunView, RunView]:
    """A bench of files (two rejections) and a search (none)."""
    with RunStore(tmp_path / "runs.db") as store:
        bench, searched = bench_of_files(store), search(store)
        return load_run(store, bench), load_run(store, searched)


def test_a_speedup_axis_is_labelled_in_ones_twos_and_fives_around_the_data() -> None:
    axis = speedup_axis([0.23, 0.8, 3.1], "speedup")
    assert axis["type"] == "log" and axis["ticktext"] == ["0.2×", "0.5×", "1×", "2×"]
    low, high = (10**end for end in axis["range"])
    assert low == pytest.approx(0.23 / 1.5) and high == pytest.approx(3.1 * 1.5)
    assert speedup_axis([40.0], "speedup")["ticktext"] == ["1×", "2×", "5×", "10×", "20×", "50×"]
    assert speedup_axis([], "speedup")["ticktext"] == ["1×"]


def test_the_speedup_per_task_plot_uses_that_axis(views: tuple[RunView, RunView]) -> None:
    figure = speedup_per_task_figure(list(views))
    assert figure is not None
    speedups = [y for trace in figure.data for y in trace.y]
    axis = figure.layout.yaxis
    assert list(axis.ticktext) and all(text.endswith("×") for text in axis.ticktext)
    assert 10 ** axis.range[0] <= min(speedups) and max(speedups) <= 10 ** axis.range[1]
    assert math.isclose(10 ** axis.range[1], max(*speedups, 1.0) * 1.5)


def test_no_rejections_is_one_line_not_an_empty_chart(views: tuple[RunView, RunView]) -> None:
    bench, searched = views
    quiet = status_figure([searched])
    assert "no rejections" in [a.text for a in quiet.layout.annotations]
    assert "xaxis2" not in quiet.layout.to_plotly_json(), "no second chart"
    busy = status_figure([bench])
    assert "rejections per rule" in [a.text for a in busy.layout.annotations]
    assert "no rejections" not in [a.text for a in busy.layout.annotations]


def test_points_above_the_memory_roof_are_explained(views: tuple[RunView, RunView]) -> None:
    bench, _ = views
    figure = roofline_figure([bench])
    assert figure is not None
    # The stored runs' ReLU baselines move 8 MB in 0.01 ms: 800 GB/s, under the 4000 GB/s roof.
    assert not notes(figure)
    for attempt in bench.attempts:
        for config in attempt.verdict.configs if attempt.verdict else []:
            for timed in config.baselines.values():
                assert timed.time_ms is not None
                timed.time_ms /= 100  # as if the inputs stayed in L2 between calls
    assert notes(roofline_figure([bench])) == [ABOVE_THE_ROOF]
