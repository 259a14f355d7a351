"""Every command of the README, run as a new user would on this machine: each gives an answer or a
one-line error, never a traceback. Commands that need a GPU are run where there is none (they must say
so in one line) and left to the GPU tests where there is one."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HAS_GPU, ROOT

README = (ROOT / "README.md").read_text()
# Lines of the README's shell blocks that are not cudasmith commands to check: installing, testing
# (the first block, which CI runs), and setting a key (no key is used here).
NOT_CHECKED = ("pip ", "python -m pytest", "export ")
# Commands that need a GPU to give an answer rather than a one-line error.
NEEDS_GPU = ("softmax_cuda.py", "softmax_triton.py", "--device cuda", "timing_fidelity.py")
# Commands that another test runs verbatim, with more checks (a CPU-timed softmax takes minutes).
RUN_ELSEWHERE = {
    "cudasmith eval examples/softmax_cpu.py --task level1/softmax --device cpu --json": (
        "commands/test_eval_cpu.py::test_quickstart_command_prints_one_correct_json_object"
    ),
}
# Variables of the test machine that would change what the commands do (keys, settings, terminals).
FOREIGN_ENV = ("OPENAI_", "ANTHROPIC_", "CUDASMITH_CONFIG", "HF_", "COLUMNS", "LINES")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", README, flags=re.S | re.M)


def readme_commands() -> list[str]:
    """Each command line of the README's bash blocks, without its comment."""
    commands = []
    for block in _blocks("bash"):
        for line in block.splitlines():
            command = line.split("  #")[0].strip()
            if command and not command.startswith("#") and not command.startswith(NOT_CHECKED):
                commands.append(command)
    return commands


def checkout_view(home: Path) -> Path:
    """A folder that shows the checkout's files (links to them) and keeps what commands write (reports,
    exports, run stores) out of the checkout."""
    view = home / "checkout"
    if not view.exists():
        view.mkdir(parents=True)
        for entry in ROOT.iterdir():
            if entry.name not in {".git", "runs"}:
                (view / entry.name).symlink_to(entry)
    return view


def run(command: str, home: Path) -> subprocess.CompletedProcess[str]:
    """The command through a shell (so `~` expands, into an empty home), in a view of the checkout,
    `cudasmith` and `python` being this interpreter's."""
    command = re.sub(r"^cudasmith\b", f"{sys.executable} -m cudasmith", command)
    command = re.sub(r"^python\b", sys.executable, command)
    env = {k: v for k, v in os.environ.items() if not k.startswith(FOREIGN_ENV)}
    env["HOME"] = str(home)
    return subprocess.run(
        ["bash", "-c", command],
        cwd=checkout_view(home),
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def assert_answer_or_one_line_error(result: subprocess.CompletedProcess[str]) -> None:
    said = result.stdout + result.stderr
    assert "Traceback (most recent call last)" not in said, said
    if result.returncode == 2:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        assert result.stdout == ""
    else:
        assert result.returncode in (0, 1), said
        assert result.stdout.strip(), "an answer"


def test_the_readme_has_the_commands_this_test_expects() -> None:
    commands = readme_commands()
    assert "cudasmith eval examples/softmax_cpu.py --task level1/softmax --device cpu --json" in commands
    assert "cudasmith cache" in commands and len(commands) >= 15
    assert len(API_EXAMPLES) == 2
    assert "cudasmith.evaluate(" in API_EXAMPLES[0] and "cudasmith.Judge(" in API_EXAMPLES[1]
    for example in API_EXAMPLES:
        assert 'device="cpu")' in example, "the example is run untimed by replacing this"


@pytest.mark.slow
@pytest.mark.parametrize("command", readme_commands())
def test_a_readme_command_answers_or_fails_in_one_line(command: str, tmp_path: Path) -> None:
    if command in RUN_ELSEWHERE:
        pytest.skip(f"{RUN_ELSEWHERE[command]} runs it")
    needs_gpu = any(marker in command for marker in NEEDS_GPU)
    if needs_gpu and HAS_GPU:
        pytest.skip("runs for minutes on a GPU; the GPU tests cover it")
    result = run(command, tmp_path)
    assert_answer_or_one_line_error(result)
    if needs_gpu:
        assert result.returncode == 2 and "no CUDA GPU is visible here" in result.stderr


# The README's Python blocks that use cudasmith's API (others are solutions, for reading).
API_EXAMPLES = [block for block in _blocks("python") if "import cudasmith\n" in block]


@pytest.mark.slow
@pytest.mark.parametrize("source", API_EXAMPLES)
def test_a_readme_python_example_runs(source: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    # The same evaluation as the quickstart command, whose timing another test checks: untimed here.
    script.write_text(source.replace('device="cpu")', 'device="cpu", timing=False)'))
    result = run(f"python {script}", tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()


def test_load_peaks_from_the_readme_answers_without_a_gpu(tmp_path: Path) -> None:
    assert "`cudasmith.device.load_peaks()`" in README
    result = run("python -c 'import cudasmith.device; print(cudasmith.device.load_peaks())'", tmp_path)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr


def test_the_install_section_says_how_to_get_the_cpu_build_and_how_long_the_tests_take() -> None:
    """CI runs the first block (its pip finds torch's CPU build on local disk); elsewhere PyPI's torch is
    the CUDA build, so the next block takes the CPU build from PyTorch's own index."""
    ci, elsewhere = _blocks("bash")[:2]
    assert [line.split("  #")[0].strip() for line in ci.splitlines()] == [
        'pip install torch==2.13.0 -e ".[dev]"',
        "python -m pytest -q",
    ]
    assert re.search(r"the whole suite: about \d+ minutes on 2 cores", ci)
    lines = [line.split("  #")[0].strip() for line in elsewhere.splitlines()]
    assert lines[0] == "pip install torch --index-url https://download.pytorch.org/whl/cpu"
    assert lines[1:] == ['pip install -e ".[dev]"', 'python -m pytest -q -m "not slow"']
