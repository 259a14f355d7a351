"""`cudasmith report` and `cudasmith export` on stored runs with known numbers: the terminal leaderboard,
the HTML page (every plot rendered in headless Chromium, nothing loaded from the network), and
trajectories that load back with their whole chain."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from cudasmith.harness.verdict import Verdict
from cudasmith.report.export import CORRECT_BONUS, RETURN_DISCOUNT, load_rows, reward
from cudasmith.report.leaderboard import print_leaderboard, print_run_details
from cudasmith.store import RunStore
from cudasmith.store.runs import RunView, load_run

from conftest import run_cli
from stored_runs import bench_of_files, search

# Debian's package is `chromium`; other systems name it differently.
CHROMIUM = next(
    (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None
)
# The flags Chromium needs in a container with no network and no display (background networking
# would flood the log with errors).
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
PLOTS = {"fast-p-eager", "fast-p-compile", "speedup-per-task", "roofline", "progress", "status"}


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Path, str, str]:
    """A store holding a bench of files and a three-round search: (path, bench id, search id)."""
    path = tmp_path / "runs.db"
    with RunStore(path) as store:
        return path, bench_of_files(store), search(store)


def write_report(views: list[RunView], path: Path) -> Path:
    """The HTML page, or the test skipped where plotly (which draws its plots) is not installed."""
    pytest.importorskip("plotly", reason="the report's plots need plotly (a dependency of cudasmith)")
    from cudasmith.report.html import write_report as write

    return write(views, path)


def views(path: Path, *run_ids: str) -> list[RunView]:
    with RunStore(path) as store:
        return [load_run(store, run_id) for run_id in run_ids]


def test_the_leaderboard_prints_runs_side_by_side(stored: tuple[Path, str, str]) -> None:
    path, bench, searched = stored
    console = Console(record=True, width=120)
    both = views(path, bench, searched)
    print_leaderboard(both, console)
    for view in both:
        print_run_details(view, console)
    text = console.export_text()
    assert text.index(searched) < text.index(bench), "the best fast_1 against eager comes first"
    assert "│" not in text and "┃" not in text, "the one table style: no vertical lines"
    assert re.search(r"fast_1 vs eager\s+66\.7 %\s+20\.0 %", text)
    assert re.search(r"USD per correct kernel\s+\$0\.015\s+no model", text)
    assert "rejected 1× for input-mutation" in text and "rejected 1× for pytorch-compute" in text
    assert "the other judge called 4 correct; 2 held up here" in text


def test_the_page_is_one_file_that_loads_nothing(stored: tuple[Path, str, str], tmp_path: Path) -> None:
    path, bench, searched = stored
    page = write_report(views(path, bench, searched), tmp_path / "report.html").read_text()
    assert set(re.findall(r'data-plot="([^"]+)"', page)) == PLOTS
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", page), "every resource is inline"
    assert "default-src 'none'" in page, "the page forbids itself any load"
    summaries = json.loads(re.search(r'id="summaries">(.*?)</script>', page, re.S).group(1))  # type: ignore[union-attr]
    assert summaries[bench]["correctness_rate"] == pytest.approx(0.4)


def _chromium(page: Path, profile: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    command = [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *flags, page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)  # type: ignore[list-item]


def _page_requests(net_log: Path) -> list[str]:
    """URLs the page asked for: the browser's own requests have no origin, the page's a (file) origin."""
    log = json.loads(net_log.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [
        event["params"]["url"]
        for event in log["events"]
        if event["type"] == start
        and event.get("params", {}).get("initiator", "not an origin") != "not an origin"
    ]


@pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (Debian: apt-get install chromium)"
)
def test_every_plot_renders_in_headless_chromium(stored: tuple[Path, str, str], tmp_path: Path) -> None:
    path, bench, searched = stored
    page = write_report(views(path, bench, searched), tmp_path / "report.html")
    net_log = tmp_path / "net.json"
    # The budget lets the page's scripts run to the end before the DOM is dumped.
    dom = _chromium(
        page, tmp_path / "profile", "--virtual-time-budget=20000", f"--log-net-log={net_log}", "--dump-dom"
    ).stdout
    figures = dict(re.findall(r'<figure class="plot" data-plot="([^"]+)">(.*?)</figure>', dom, re.S))
    assert set(figures) == PLOTS
    for name, body in figures.items():
        assert "main-svg" in body, f"{name}: Plotly drew nothing"
        assert re.search(r'class="(trace|bars|scatterlayer)', body), f"{name}: no data drawn"
    assert _page_requests(net_log) == []
    screenshot = tmp_path / "report.png"
    _chromium(page, tmp_path / "profile2", "--window-size=1300,4200", f"--screenshot={screenshot}")
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_export_rows_load_back_with_the_whole_chain(
    stored: tuple[Path, str, str], tmp_path: Path, fmt: str
) -> None:
    if fmt == "parquet":
        pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (the parquet and dev extras)")
    path, _, searched = stored
    out = tmp_path / f"turns.{fmt}"
    done = run_cli("export", searched, "--format", fmt, "--output", str(out), "--store", str(path))
    assert done.returncode == 0, done.stderr
    rows = load_rows(out)
    assert [row["turn"] for row in rows] == [0, 1, 2]
    first, _, last = rows
    assert last["chain"] == [first["candidate_id"], rows[1]["candidate_id"], last["candidate_id"]]
    assert last["parents"] == [rows[1]["candidate_id"]] and last["trajectory_id"] == first["candidate_id"]
    assert [turn["prompt"][1]["content"] for turn in last["history"]] == ["prompt 0", "prompt 1"]
    assert last["prompt"][1]["content"] == "prompt 2" and last["response"].startswith("answer 2")
    assert last["code"] == "code 2" and last["verdict"]["status"] == "correct" and last["status"] == "correct"
    assert [row["reward"] for row in rows] == pytest.approx([0.0, CORRECT_BONUS + 1.5, CORRECT_BONUS + 3.0])
    # Each turn is credited with the turns that refined it, discounted per step.
    assert rows[1]["discounted_return"] == pytest.approx(
        rows[1]["reward"] + RETURN_DISCOUNT * rows[2]["reward"]
    )
    assert first["discounted_return"] == pytest.approx(RETURN_DISCOUNT * rows[1]["discounted_return"])


def test_a_cheat_earns_no_reward() -> None:
    cheat = Verdict.from_dict({"status": "rejected", "reason": "caching", "speedup": 100.0})
    assert reward(cheat) == 0.0
    assert reward(Verdict.from_dict({"status": "correct", "reason": "", "speedup": None})) == CORRECT_BONUS
    assert reward(None) == 0.0, "a stored verdict that fails its MAC earns nothing"


@pytest.mark.slow
def test_report_cli_writes_the_page_and_json(stored: tuple[Path, str, str], tmp_path: Path) -> None:
    pytest.importorskip("plotly", reason="the report's plots need plotly (a dependency of cudasmith)")
    path, bench, searched = stored
    out = tmp_path / "page.html"
    done = run_cli("report", bench, "latest", "--json", "--html", str(out), "--store", str(path))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert list(document) == [bench, searched]
    assert document[searched]["baselines"]["eager"]["fast_p"]["fast_1"] == pytest.approx(2 / 3)
    assert out.is_file()
    missing = run_cli("report", "latest", "--store", str(tmp_path / "none.db"))
    assert missing.returncode == 2 and "no run store" in missing.stderr
    bench_export = run_cli("export", bench, "--store", str(path), "--output", str(tmp_path / "x.jsonl"))
    assert bench_export.returncode == 2 and "no judged answers of a model" in bench_export.stderr


def test_an_unknown_run_is_one_line_naming_the_latest_runs_newest_first(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with RunStore(path) as store:
        oldest, middle, newest = bench_of_files(store), search(store), search(store)
    done = run_cli("report", "nosuchrun", "--store", str(path))
    assert done.returncode == 2 and done.stdout == ""
    assert (
        done.stderr.strip() == f"error: no run 'nosuchrun' in {path} (latest: {newest}, {middle}, {oldest})"
    )
