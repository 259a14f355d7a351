"""The command's surface for a new user: one-line errors where a GPU is missing, the version, help that
shows flags as flags, time limits, unknown levels, and task names that every command takes alike."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

import cudasmith
from cudasmith.cli import app
from cudasmith.commands.judging import (
    ConfigTimeLimitOption,
    FirstCallExtraOption,
    LoadTimeLimitOption,
    TimeLimitOption,
)
from cudasmith.errors import UsageError
from cudasmith.harness.options import EvalOptions
from cudasmith.harness.verdict import Verdict

from conftest import EXAMPLES, PROBLEMS, ROOT, SOLUTIONS, run_cli

NO_GPU = not torch.cuda.is_available()
needs_no_gpu = pytest.mark.skipif(not NO_GPU, reason="checks what happens on a machine without a GPU")


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "80"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def one_line_error(*args: str) -> str:
    code, out, err = invoke(*args)
    assert code == 2, out + err
    assert out == "" and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A KernelBench-style checkout with one problem, `kernelbench/level1/19_Add`."""
    (tmp_path / "KernelBench" / "level1").mkdir(parents=True)
    shutil.copy(PROBLEMS / "kernelbench_style_add.py", tmp_path / "KernelBench" / "level1" / "19_Add.py")
    return tmp_path


def test_version_prints_the_package_version() -> None:
    code, out, _ = invoke("--version")
    assert code == 0 and out.strip() == f"cudasmith {cudasmith.__version__}"


@pytest.mark.parametrize("command", [[], ["eval"], ["ask"], ["tasks"], ["show"], ["device"]])
def test_help_shows_flags_without_a_value(command: list[str]) -> None:
    code, out, _ = invoke(*command, "--help")
    assert code == 0
    assert "--help" in out and "<bool>" not in out


def test_time_limit_help_states_the_harness_defaults() -> None:
    """The defaults live in cudasmith.harness.options; the help and the README repeat them (the help
    cannot import them: --help must not import torch), and this keeps them in step."""
    from cudasmith.harness import options

    defaults = EvalOptions()
    assert defaults.call_timeout_s is None, "the default call limit follows the reference's own time"
    call_help = TimeLimitOption.__metadata__[0].help
    assert (
        f"{options.CALL_FACTOR:g}x the reference's own time, at least {options.CALL_FLOOR_S:g}]" in call_help
    )
    for option, seconds in (
        (LoadTimeLimitOption, defaults.load_timeout_s),
        (FirstCallExtraOption, defaults.first_call_extra_s),
        (ConfigTimeLimitOption, defaults.config_time_limit_s),
    ):
        help_text = option.__metadata__[0].help
        assert re.search(rf"\[default: {seconds:g}\]", help_text), help_text
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert (
        f"longer than {options.CALL_FACTOR:g}× the reference's own time (and at least {options.CALL_FLOOR_S:g} s;"
        in readme
    )
    assert f"the first call gets {defaults.first_call_extra_s:g} s more" in readme
    assert f"take longer than {defaults.load_timeout_s:g} s" in readme and "--load-time-limit" in readme


@needs_no_gpu
@pytest.mark.parametrize(
    "args",
    [
        ["show", "challenge/gemm_bf16", "--no-source", "--device", "cuda"],
        ["device", "--device", "cuda"],
        ["eval", str(EXAMPLES / "softmax_cpu.py"), "--task", "level1/softmax", "--device", "cuda"],
    ],
)
def test_a_gpu_that_is_not_here_is_one_line(args: list[str]) -> None:
    assert "no CUDA GPU is visible here" in one_line_error(*args)


@needs_no_gpu
def test_eval_without_a_device_does_not_guess_the_cpu() -> None:
    error = one_line_error("eval", str(EXAMPLES / "softmax_cuda.py"), "--task", "level1/softmax")
    assert "no CUDA GPU is visible here; add --device cpu" in error


@needs_no_gpu
def test_load_peaks_answers_for_the_cpu_and_refuses_a_missing_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDASMITH_CACHE", str(tmp_path))
    assert cudasmith.load_peaks() is None  # this machine's CPU, not measured in this fresh cache
    with pytest.raises(UsageError, match="no CUDA GPU is visible here"):
        cudasmith.load_peaks("cuda")


@pytest.mark.slow
@needs_no_gpu
def test_the_python_api_says_when_it_judged_on_the_cpu_by_default() -> None:
    verdict = cudasmith.evaluate(SOLUTIONS / "vector_add_cpu.py", task="level1/vector_add", timing=False)
    assert verdict.status == "correct", verdict.reason
    assert "judged on the CPU: no device was named and no CUDA GPU is visible here" in verdict.notes


def test_an_unknown_level_is_a_usage_error_listing_the_levels(checkout: Path) -> None:
    error = one_line_error("tasks", "--level", "level9")
    assert "unknown level 'level9'" in error and "apps, backward, challenge, level1" in error
    assert "kernelbench/level1" in one_line_error("tasks", "--from", str(checkout), "--level", "level9")


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--time-limit", "0", "--time-limit must be a positive"),
        ("--load-time-limit", "-3", "--load-time-limit"),
    ],
)
def test_time_limits_must_be_positive(flag: str, value: str, message: str) -> None:
    args = ["eval", str(EXAMPLES / "softmax_cpu.py"), "--task", "level1/softmax", "--device", "cpu"]
    assert message in one_line_error(*args, flag, value)


@pytest.mark.slow
def test_time_limit_ends_a_forward_that_never_returns() -> None:
    result = run_cli(
        "eval",
        str(SOLUTIONS / "loops_forever.py"),
        "--task",
        "level1/vector_add",
        "--device",
        "cpu",
        "--no-timing",
        "--time-limit",
        "10",
        "--first-call-extra",
        "0",
        "--json",
    )
    verdict = json.loads(result.stdout)
    assert result.returncode == 1 and verdict["status"] == "timeout"
    assert "no answer within 10 s" in verdict["reason"]


def test_time_limits_reach_the_harness_options(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both limits land in EvalOptions (a slow import is not timed here: the reference's own import
    shares the load limit, and on a busy machine a short limit would stop it first)."""
    seen: list[EvalOptions] = []

    class Judge:
        def __init__(self, problem: object, options: EvalOptions, *args: object, **kwargs: object) -> None:
            self.problem, self.options = problem, options  # builds ahead read both
            seen.append(options)

        def __enter__(self) -> Judge:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def judge_as_done(self, solutions: Iterable[Path]) -> Iterator[tuple[int, Verdict]]:
            for position, path in enumerate(solutions):
                verdict = Verdict(
                    status="correct", reason="", task="level1/relu", solution=str(path), device="cpu"
                )
                yield position, verdict

    monkeypatch.setattr("cudasmith.harness.session.Judge", Judge)
    args = ["eval", str(EXAMPLES / "softmax_cpu.py"), "--task", "level1/relu", "--device", "cpu", "--json"]
    assert invoke(*args, "--time-limit", "7.5", "--load-time-limit", "60")[0] == 0
    assert invoke(*args)[0] == 0
    assert (seen[0].call_timeout_s, seen[0].load_timeout_s) == (7.5, 60.0)
    assert (seen[1].call_timeout_s, seen[1].load_timeout_s) == (
        EvalOptions().call_timeout_s,
        EvalOptions().load_timeout_s,
    )


@pytest.mark.slow
def test_listed_names_are_taken_by_every_command_with_the_same_from(checkout: Path) -> None:
    listed = json.loads(invoke("tasks", "--from", str(checkout), "--json")[1])["tasks"]
    assert [row["name"] for row in listed] == ["kernelbench/level1/19_Add"]
    where = ["--from", str(checkout)]
    for args in (
        ["show", "kernelbench/level1/19_Add", *where, "--json"],
        ["show", "--task", "kernelbench/level1/19_Add", *where, "--json"],
        ["show", "level1/19_Add", *where, "--json"],
    ):
        code, out, err = invoke(*args)
        assert code == 0, err
        assert json.loads(out)["name"] == "kernelbench/level1/19_Add"
    code, out, err = invoke("prompt", "--task", "kernelbench/level1/19_Add", *where, "--device", "cpu")
    assert code == 0 and "# Task: kernelbench/level1/19_Add" in out, err
    code, out, err = invoke(
        "eval",
        str(SOLUTIONS / "vector_add_cpu.py"),
        "--task",
        "kernelbench/level1/19_Add",
        *where,
        "--device",
        "cpu",
        "--no-timing",
        "--json",
    )
    assert code == 0, err
    assert json.loads(out)["task"] == "kernelbench/level1/19_Add"


def test_listed_names_without_their_directory_say_what_is_missing(checkout: Path) -> None:
    assert "needs that --from DIR too" in one_line_error("show", "kernelbench/level1/19_Add")
    error = one_line_error("show", "kernelbench/level1/19_Ad", "--from", str(checkout))
    assert "did you mean kernelbench/level1/19_Add?" in error


def test_every_command_takes_task_and_problem_options() -> None:
    for args in (
        ["show", "--task", "level1/relu"],
        ["show", "--problem", str(PROBLEMS / "kernelbench_style_add.py")],
    ):
        code, _, err = invoke(*args, "--json")
        assert code == 0, err
    code, out, err = invoke("prompt", "--task", "level1/relu", "--device", "cpu")
    assert code == 0 and "# Task: level1/relu" in out, err
    assert "give the task once" in one_line_error("show", "level1/relu", "--task", "level1/relu")
    assert "exactly one of" in one_line_error("show")
