"""What the commands write, where, and when: nothing where the user did not ask, nothing silent for long
when there is no terminal, errors and help that read well in one, words in the right number, and a
bench of a folder that names no task stopped before judging."""

from __future__ import annotations

import io
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import typer
from rich.console import Console
from typer.core import TyperGroup
from typer.testing import CliRunner

from cudasmith.cli import app
from cudasmith.commands.bench import _solution_folder
from cudasmith.commands.help import flowing
from cudasmith.errors import UsageError
from cudasmith.report.optimize_view import print_summary
from cudasmith.store import RunStore, Usage
from cudasmith.store.runs import load_run
from cudasmith.store.summary import Cost

from conftest import PROBLEMS, PROGRESS_LINE, ROOT, SOLUTIONS, interruptible
from fake_llm import FakeLLMServer, Reply, openai_body
from stored_runs import search

# Nouns that a count of one must not take in their plural.
PLURALS = (
    "candidates",
    "verdicts",
    "lanes",
    "answers",
    "rounds",
    "kernels",
    "tasks",
    "turns",
    "calls",
    "files",
)
WIDTH = 80


def environment(**extra: str) -> dict[str, str]:
    foreign = ("OPENAI_", "ANTHROPIC_", "CUDASMITH_CONFIG", "CUDASMITH_STORE", "HF_", "COLUMNS", "LINES")
    return {**{k: v for k, v in os.environ.items() if not k.startswith(foreign)}, **extra}


def in_a_terminal(args: list[str], cwd: Path, columns: int = WIDTH) -> tuple[int, str]:
    """Run `cudasmith ARGS` with stdout and stderr on a pseudo-terminal of `columns`; its exit code and
    everything it wrote."""
    leader, follower = pty.openpty()
    env = environment(COLUMNS=str(columns), LINES="40", TERM="xterm")
    process = subprocess.Popen(
        [sys.executable, "-m", "cudasmith", *args], stdout=follower, stderr=follower, cwd=cwd, env=env
    )
    os.close(follower)
    written = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed: the process is done
                break
            if not chunk:
                break
            written += chunk
        elif process.poll() is not None:
            break
    os.close(leader)
    return process.wait(timeout=60), re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", written.decode()).replace("\r", "")


def test_an_error_wraps_at_the_terminal_and_stays_one_line_when_piped(tmp_path: Path) -> None:
    missing = tmp_path / ("a-folder-with-a-long-name-" * 3) / "solution.py"
    args = ["eval", str(missing), "--task", "level1/relu", "--device", "cpu"]
    code, written = in_a_terminal(args, tmp_path)
    lines = written.strip().splitlines()
    assert code == 2 and lines[0].startswith("error: solution file not found:") and len(lines) > 1
    assert all(len(line) <= WIDTH for line in lines), lines
    assert all(line.startswith(" " * len("error: ")) for line in lines[1:]), "under the message's start"
    piped = subprocess.run(
        [sys.executable, "-m", "cudasmith", *args], capture_output=True, text=True, env=environment()
    )
    assert piped.returncode == 2 and piped.stderr.strip() == f"error: solution file not found: {missing}"


def test_show_in_a_terminal_leaves_the_source_unwrapped(tmp_path: Path) -> None:
    """The terminal wraps a long line of the reference for the eye; no newline is written into it, so
    that code copied from the terminal still runs."""
    source = (ROOT / "src" / "cudasmith" / "tasks" / "suite" / "level3" / "gpt_forward.py").read_text()
    long_lines = [line for line in source.splitlines() if len(line) > WIDTH]
    code, written = in_a_terminal(["show", "level3/gpt_forward", "--device", "cpu"], tmp_path)
    assert code == 0 and long_lines, written
    assert all(line in written.splitlines() for line in long_lines), written


def test_help_flows_to_the_terminal_width() -> None:
    """Docstrings break lines where the source does; the help must not."""
    assert (
        flowing("A line\n    that goes on.\n\n    Another paragraph.")
        == "A line that goes on.\n\nAnother paragraph."
    )
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    for name, command in group.commands.items():
        for paragraph in (command.help or "").split("\n\n"):
            assert "\n" not in paragraph, (name, paragraph)


@pytest.mark.slow
def test_without_a_terminal_eval_says_what_it_is_doing(tmp_path: Path) -> None:
    args = [str(SOLUTIONS / "vector_add_cpu.py"), "--task", "level1/vector_add", "--device", "cpu"]
    done = subprocess.run(
        [sys.executable, "-m", "cudasmith", "eval", *args, "--seeds", "1", "--json"],
        capture_output=True,
        text=True,
        env=environment(CUDASMITH_CACHE=str(tmp_path / "cache")),
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    phases = [m.group(1) for line in done.stderr.splitlines() if (m := PROGRESS_LINE.match(line))]
    assert phases[0] == "loading" and {"measuring", "checking", "timing"} <= set(phases), done.stderr
    assert '"status": "correct"' in done.stdout, "stdout keeps the JSON alone"


def test_in_a_terminal_eval_draws_a_bar_instead(tmp_path: Path) -> None:
    args = ["eval", str(SOLUTIONS / "vector_add_cpu.py"), "--task", "level1/vector_add", "--device", "cpu"]
    code, written = in_a_terminal([*args, "--seeds", "1", "--no-timing"], tmp_path, columns=120)
    assert code == 0 and "correct" in written, written
    assert not any(PROGRESS_LINE.match(line) for line in written.splitlines()), written


def test_counts_of_one_take_the_singular(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store:
        run_id = search(store, cost_per_answer=None)
        summary = load_run(store, run_id).summary
    summary.counts.rounds = 1
    summary.cost = Cost({"openai:fake": Usage(calls=1, completions=2, cost_usd=0.5, unpriced_completions=1)})
    text = io.StringIO()
    print_summary(summary, console=Console(file=text, width=200))
    written = text.getvalue()
    assert "in 1 round:" in written and "1 answer of unknown price" in written
    assert not [m for m in re.findall(r"\b1 (\w+)", written) if m in PLURALS], written


def test_a_folder_named_after_no_task_stops_the_bench_unless_skipped(tmp_path: Path) -> None:
    for folder in ("level1/softmaxx", "level1/vector_add"):
        (tmp_path / folder).mkdir(parents=True)
        shutil.copy(SOLUTIONS / "vector_add_cpu.py", tmp_path / folder / "a.py")
    with pytest.raises(
        UsageError, match=r"level1/softmaxx is named after no built-in task; did you mean"
    ) as e:
        _solution_folder(tmp_path, None, skip_unknown=False)
    assert "level1/softmax" in str(e.value) and "--skip-unknown" in str(e.value)
    found = _solution_folder(tmp_path, None, skip_unknown=True)
    assert [s.task for s in found.submissions] == ["level1/vector_add"] and len(found.unmatched) == 1
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cudasmith",
            "bench",
            str(tmp_path),
            "--device",
            "cpu",
            "--store",
            str(tmp_path / "r.db"),
        ],
        capture_output=True,
        text=True,
        env=environment(),
    )
    assert done.returncode == 2 and "did you mean level1/softmax" in done.stderr
    assert not (tmp_path / "r.db").exists(), "stopped before the store was written"


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_search_quality_stops_before_any_work_and_writes_nothing(tmp_path: Path, device: str) -> None:
    """No key for the model (and, on a machine without a GPU, no GPU): one line, exit 2, nothing written."""
    script = ROOT / "benchmarks" / "search_quality.py"
    command = [
        sys.executable,
        str(script),
        "--model",
        "openai:gpt-5-mini",
        "--level",
        "level1",
        "--device",
        device,
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=tmp_path, env=environment(), timeout=300
    )
    assert done.returncode == 2 and done.stderr.strip().splitlines()[-1].startswith("error: "), done.stderr
    assert "Traceback" not in done.stderr and "[1/" not in done.stderr
    assert list(tmp_path.iterdir()) == [], "no runs/quality.db before it fails"


@pytest.mark.slow
def test_ctrl_c_of_optimize_says_how_to_resume(tmp_path: Path) -> None:
    """Without a terminal: exit code 130 and one line with the run id and the command that resumes it."""
    kernel = (SOLUTIONS / "optimize" / "add_fast.py").read_text()
    with FakeLLMServer().running() as server:
        server.push(Reply(openai_body(f"```python\n{kernel}```\n")), Reply(hang=True), Reply(hang=True))
        command = [sys.executable, "-m", "cudasmith", "optimize", "--problem", str(PROBLEMS / "add_small.py")]
        command += ["-m", "openai:fake-coder", "-n", "3", "--depth", "2", "--device", "cpu", "--seeds", "1"]
        command += ["--no-timing", "--store", str(tmp_path / "runs.db")]
        env = environment(OPENAI_BASE_URL=f"{server.url}/v1", OPENAI_API_KEY="sk-fake")
        driver = subprocess.Popen(
            command,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=interruptible,
        )
        deadline = time.monotonic() + 300
        while len(server.seen) < 3:  # every call is out: the run is in the middle of its round
            assert driver.poll() is None and time.monotonic() < deadline, driver.communicate()
            time.sleep(0.2)
        driver.send_signal(signal.SIGINT)
        _, stderr = driver.communicate(timeout=120)
    assert driver.returncode == 130, stderr
    [line] = [line for line in stderr.splitlines() if "resume with" in line]
    run_id = re.search(r"stopped optimize (optimize-\S+):", line)
    assert run_id and f"`cudasmith optimize --resume {run_id.group(1)}`" in line, line


def test_export_writes_beside_the_store_and_says_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with RunStore(tmp_path / "store" / "runs.db") as store:
        run_id = search(store)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = CliRunner().invoke(app, ["export", "latest", "--store", str(tmp_path / "store" / "runs.db")])
    written = tmp_path / "store" / f"{run_id}.trajectories.jsonl"
    assert result.exit_code == 0 and result.stdout.strip() == f"3 turns of {run_id} written to {written}"
    assert written.is_file() and list(elsewhere.iterdir()) == [], "nothing in the current directory"
