"""`cudasmith ask` end to end on the CPU: a fake OpenAI-compatible server answers, every candidate is
judged, verdicts are printed and kept; and `cudasmith prompt`.

The main case runs the command as a user would, in a fresh interpreter; the others run it in this
process (Typer's runner): the same code without the seconds of start-up.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cudasmith.cli import app
from cudasmith.device import DevicePeaks, save_peaks, software_versions
from cudasmith.hardware import device_name

from conftest import EXAMPLES, PROGRESS_LINE, SOLUTIONS
from fake_llm import FakeLLMServer, Reply, openai_body

CORRECT = (EXAMPLES / "softmax_cpu.py").read_text()
WRONG = (SOLUTIONS / "softmax_cpu_unnormalised.py").read_text()
ANSWERS = (
    f"A row-wise softmax with OpenMP.\n\n```python\n{CORRECT}```\nIt subtracts the row maximum first.",
    f"```python\n{WRONG}```",
    "I would use shared memory and warp shuffles here.",
)
KEY = "sk-fake-key-for-tests"
# The judge checks one input set per config and does not time: these tests are about the pipeline.
QUICK = ["--device", "cpu", "--no-timing", "--seeds", "1"]
# Variables of the test machine that would change what the commands do.
FOREIGN_ENV = ("OPENAI_", "ANTHROPIC_", "CUDASMITH_CONFIG", "HF_")


def cudasmith(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command in a fresh interpreter."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(FOREIGN_ENV)}
    command = [sys.executable, "-m", "cudasmith", *args]
    environment.update(env or {})
    return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False, env=environment)


def invoke(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command in this process, with the environment it would see."""
    cleared: dict[str, str | None] = {k: None for k in os.environ if k.startswith(FOREIGN_ENV)}
    result = CliRunner().invoke(app, list(args), env={**cleared, **(env or {})})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(list(args), result.exit_code, result.stdout, result.stderr)


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The error line of a failed command; notices of retries and progress lines (the seconds since the
    start, then what is being done) may come before it."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = [
        line
        for line in result.stderr.strip().splitlines()
        if "; retrying in" not in line and not PROGRESS_LINE.match(line)
    ]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer().running() as fake:
        yield fake


def openai_env(server: FakeLLMServer) -> dict[str, str]:
    return {"OPENAI_BASE_URL": f"{server.url}/v1", "OPENAI_API_KEY": KEY}


@pytest.mark.slow
def test_ask_skips_a_repeated_answer_as_optimize_does(server: FakeLLMServer, tmp_path: Path) -> None:
    """The third answer repeats the second (its layout aside): never judged, never the best."""
    again = ANSWERS[0].replace("    ", "  ")
    server.push(Reply(openai_body(ANSWERS[1], ANSWERS[0], again)))
    args = ["--model", "openai:fake-coder", "-n", "3", *QUICK, "--store", str(tmp_path / "runs.db")]
    result = invoke("ask", "level1/softmax", *args, env=openai_env(server))
    assert result.returncode == 0, result.stderr
    assert "1 of 3 correct (1 skipped as repeats of earlier answers)" in result.stdout, result.stdout
    run_dir = Path(re.search(r"kept in (\S+)/ \(replay", result.stdout).group(1))  # type: ignore[union-attr]
    report = json.loads((run_dir / "summary.json").read_text())
    wrong, first, repeat = report["candidates"]
    assert (wrong["verdict"]["status"], first["verdict"]["status"]) == ("incorrect", "correct")
    assert repeat["verdict"] is None and repeat["skipped"] == f"a duplicate of candidate {first['candidate']}"
    assert report["best"] == first["candidate"]
    row = next(
        line.split() for line in result.stdout.splitlines() if line.startswith(f"{repeat['candidate']} ")
    )
    assert row[1] == "skipped" and " ".join(row).endswith(f"a duplicate of candidate {first['candidate']}")
    assert (run_dir / f"candidate_{repeat['candidate']}.py").is_file(), "its code is kept all the same"
    assert not (run_dir / f"candidate_{repeat['candidate']}.verdict.json").exists()


@pytest.mark.slow
def test_ask_judges_every_answer_and_the_run_replays(server: FakeLLMServer, tmp_path: Path) -> None:
    server.push(Reply(openai_body(*ANSWERS, prompt_tokens=3000, completion_tokens=900)))
    model = ["--model", "openai:fake-coder", "-n", "3"]
    result = cudasmith(
        "ask",
        "level1/softmax",
        *model,
        *QUICK,
        "--json",
        "--store",
        str(tmp_path / "runs.db"),
        env=openai_env(server),
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    candidates = report["candidates"]
    assert [c["verdict"]["status"] for c in candidates] == ["correct", "incorrect", "compile_error"]
    first, wrong, empty = (c["candidate"] for c in candidates)
    assert report["best"] == first
    assert "values differ" in candidates[1]["verdict"]["reason"]
    assert candidates[2]["verdict"]["reason"] == "no solution in the answer: the answer holds no code"
    assert report["usage"]["input_tokens"] == 3000 and report["usage"]["output_tokens"] == 900
    assert KEY not in result.stdout + result.stderr

    [request] = server.seen
    assert request.body["n"] == 3 and request.body["model"] == "fake-coder"
    prompt = request.body["messages"][1]["content"]
    assert '{"rows": 1021, "cols": 4097}' in prompt and "50257" not in prompt, "public configs only"
    assert "compile_c" in prompt

    run_dir = Path(report["run_dir"])
    assert (run_dir / f"candidate_{first}.py").read_text() == CORRECT
    assert not (run_dir / f"candidate_{empty}.py").exists()
    assert (run_dir / f"candidate_{empty}.response.md").read_text() == ANSWERS[2]
    assert json.loads((run_dir / f"candidate_{wrong}.verdict.json").read_text())["status"] == "incorrect"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["candidates"][0]["verdict"]["status"] == "correct"
    assert KEY not in "".join(p.read_text() for p in run_dir.iterdir())

    # The first answer again, from the run directory and without a server: the table a person reads.
    replay = invoke(
        "ask", "level1/softmax", "--model", f"replay:{run_dir}", *QUICK, "--store", str(tmp_path / "runs.db")
    )
    assert replay.returncode == 0, replay.stderr
    assert "1 of 1 correct" in replay.stdout and "correct on" in replay.stdout
    assert f"replay with --model replay:{tmp_path}" in replay.stdout.replace("\n", "")
    assert len(server.seen) == 1


def test_no_correct_candidate_exits_1(server: FakeLLMServer, tmp_path: Path) -> None:
    answer = "Here:\n```python\nclass ModelNew(nn.Module)\n```"
    server.push(Reply(openai_body(answer, finish_reason="length")))
    args = ["--model", "openai:fake-coder", *QUICK, "--json", "--store", str(tmp_path / "runs.db")]
    result = invoke("ask", "level1/softmax", *args, env=openai_env(server))
    assert result.returncode == 1, result.stderr
    [candidate] = json.loads(result.stdout)["candidates"]
    assert candidate["verdict"]["status"] == "compile_error"
    assert "the model hit its token limit" in candidate["verdict"]["reason"]
    assert candidate["finish_reason"] == "length"


def test_a_missing_key_says_which_variable_to_set(tmp_path: Path) -> None:
    result = invoke(
        "ask", "level1/softmax", "--model", "openai:gpt-5-mini", *QUICK, "--store", str(tmp_path / "runs.db")
    )
    assert "set OPENAI_API_KEY (or base_url in [llm.openai]" in one_line_error(result)
    assert list(tmp_path.iterdir()) == [], "nothing is written before the model can be asked"


def test_a_failing_server_is_one_line_after_the_configured_retries(
    server: FakeLLMServer, tmp_path: Path
) -> None:
    server.default = Reply({"error": {"message": "overloaded"}}, 503)
    config = tmp_path / "cudasmith.toml"
    config.write_text("[llm]\nmax_retries = 1\nbackoff_initial_s = 0.01\n")
    args = [
        "--model",
        "openai:fake",
        "--config",
        str(config),
        *QUICK,
        "--store",
        str(tmp_path / "runs" / "runs.db"),
    ]
    error = one_line_error(invoke("ask", "level1/softmax", *args, env=openai_env(server)))
    assert "HTTP 503" in error and "overloaded" in error and "after 2 attempts" in error
    assert "no run directory is left" in error
    assert len(server.seen) == 2
    assert not (tmp_path / "runs").exists(), "no run folder, and no store or folder this run made"


def test_a_local_model_without_weights_says_how_to_get_them(tmp_path: Path) -> None:
    pytest.importorskip("transformers", reason="local hf: models need transformers (pip install -e '.[hf]')")
    # A fresh interpreter: the Hugging Face libraries read HF_HUB_OFFLINE when they are imported.
    env = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    args = [
        "--model",
        "hf:cudasmith-tests/no-such-model",
        *QUICK,
        "--store",
        str(tmp_path / "runs" / "runs.db"),
    ]
    error = one_line_error(cudasmith("ask", "level1/relu", *args, env=env))
    assert "no weights here (HF_HUB_OFFLINE is set)" in error
    assert "hf download cudasmith-tests/no-such-model" in error and "OPENAI_API_KEY" in error


def test_prompt_prints_what_would_be_sent() -> None:
    result = invoke("prompt", "level1/softmax", "--device", "cpu")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("─── system ───\n")
    assert "# Task: level1/softmax" in result.stdout and "50257" not in result.stdout
    as_json = json.loads(invoke("prompt", "level1/softmax", "--device", "cpu", "--json").stdout)
    assert [m["role"] for m in as_json["messages"]] == ["system", "user"]


def test_prompt_shows_the_peaks_cudasmith_device_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDASMITH_CACHE", str(tmp_path))  # a cache where no peaks were measured
    unmeasured = invoke("prompt", "level1/softmax", "--device", "cpu").stdout
    assert "- measured bandwidth and peak FLOP rates: not measured on this machine yet" in unmeasured
    assert "`cudasmith device` measures them" in unmeasured and "TFLOP/s" not in unmeasured
    assert not list(tmp_path.glob("device/*.json")), "building a prompt measures nothing"
    peaks = DevicePeaks(
        device=device_name("cpu"),
        kind="cpu",
        memory_gb_per_s=21.5,
        matrix_tflops={"float32": 0.14, "float64": 0.07},
        vector_tflops={"float32": 0.2, "float64": 0.1},
        cache_bytes=32 * 2**20,
        versions=software_versions(),
    )
    save_peaks(peaks)
    measured = invoke("prompt", "level1/softmax", "--device", "cpu").stdout
    assert "- measured DRAM bandwidth: 21.5 GB/s\n- measured FP32 peak: 0.2 TFLOP/s\n" in measured
    assert "- measured FP64 peak: 0.1 TFLOP/s" in measured and "not measured" not in measured


def test_prompt_for_a_parent_needs_its_verdict(tmp_path: Path) -> None:
    parent = ["--parent", str(EXAMPLES / "softmax_cpu.py")]
    error = one_line_error(invoke("prompt", "level1/softmax", "--device", "cpu", *parent))
    assert "--parent and --verdict go together" in error
    verdict = tmp_path / "verdict.json"
    verdict.write_text(json.dumps({"status": "correct", "reason": "correct on 3 configs", "speedup": 0.21}))
    result = invoke("prompt", "level1/softmax", "--device", "cpu", *parent, "--verdict", str(verdict))
    assert result.returncode == 0, result.stderr
    assert "It is correct and runs at 0.21x eager PyTorch. Make it faster" in result.stdout
