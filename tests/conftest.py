"""Test setup: GPU tests are skipped without a GPU; every test session gets its own kernel cache."""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SOLUTIONS = Path(__file__).parent / "solutions"
# Cheats beside their honest twins: every rule of the judge has a solution here that breaks it.
EXPLOITS = Path(__file__).parent / "exploits" / "solutions"
PROBLEMS = Path(__file__).parent / "problems"
# What cudasmith.report.progress writes on stderr without a terminal: the seconds since the command
# started, then what it is doing.
PROGRESS_LINE = re.compile(r"^ *\d+\.\d s  (\S+)")


def without_progress(stderr: str) -> str:
    """A command's stderr less its progress lines: the errors and notes it wrote."""
    return "".join(line for line in stderr.splitlines(keepends=True) if not PROGRESS_LINE.match(line))


def interruptible() -> None:
    """A child's preexec_fn where the test stops it with SIGINT: Ctrl-C's default disposition, whatever
    this run inherited. A test run started in the background of a non-interactive shell ignores SIGINT,
    and a child would inherit that, so it would never see the Ctrl-C at all."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def slow_memory(cache: Path) -> dict[str, str]:
    """The environment of a process whose CPU's peaks, kept in `cache`, read a memory bandwidth of 10 MB/s:
    a config's check, estimated from its bytes (harness/check_time.py), takes minutes for a few hundred KB,
    whatever the machine's load."""
    env = {**os.environ, "CUDASMITH_CACHE": str(cache)}
    rates = ({"float32": 0.5}, {"float32": 0.25})
    subprocess.run(
        [sys.executable, "-c", "from cudasmith.device import DevicePeaks, save_peaks, software_versions;"
         "from cudasmith.hardware import device_name;"
         f"save_peaks(DevicePeaks(device_name('cpu'), 'cpu', 0.01, *{rates!r}, 2**25, versions=software_versions()))"],
        env=env, check=True, timeout=120,
    )  # fmt: skip
    return env


def _has_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


HAS_GPU = _has_gpu()

# The language-model side needs the SDKs and pydantic (dependencies of the package). The GPU machines
# run the harness without them: there these test modules are left out instead of failing to import.
LLM_PACKAGES = ("pydantic", "openai", "anthropic")
collect_ignore_glob = (
    []
    if all(importlib.util.find_spec(name) for name in LLM_PACKAGES)
    else ["llm/test_llm_*.py", "search/test_ask.py", "search/test_prompts.py", "search/test_parsing.py"]
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def _kernel_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Compiled kernels go to a fresh directory, so tests exercise compilation and not a stale cache; the
    judge's key (runtime/seal.py) is made there too, never in the user's configuration folder."""
    os.environ["CUDASMITH_CACHE"] = str(tmp_path_factory.mktemp("cudasmith-cache"))
    os.environ["CUDASMITH_KEY_FILE"] = str(tmp_path_factory.mktemp("cudasmith-key") / "judge.key")


def run_cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run the cudasmith command as a user would, in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "cudasmith", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
