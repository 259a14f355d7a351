"""The whole pipeline on the CPU: spawned workers, reference process, comparison, timing, verdicts."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

import cudasmith
from cudasmith import EvalOptions, evaluate
from cudasmith.device import DevicePeaks, save_peaks, software_versions
from cudasmith.hardware import device_name
from cudasmith.report.verdict_table import print_verdict
from cudasmith.tasks import load_task

from conftest import EXAMPLES, PROBLEMS, SOLUTIONS, run_cli, without_progress

QUICK = {"device": "cpu", "timing": False, "seeds_per_config": 2}


def quick(solution: str, task: str = "level1/vector_add", **overrides: object) -> cudasmith.Verdict:
    return evaluate(SOLUTIONS / solution, task=task, **{**QUICK, **overrides})


@pytest.mark.slow
def test_quickstart_command_prints_one_correct_json_object() -> None:
    result = run_cli(
        "eval", str(EXAMPLES / "softmax_cpu.py"), "--task", "level1/softmax", "--device", "cpu", "--json"
    )
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)  # exactly one JSON document, nothing else on stdout
    assert verdict["status"] == "correct"
    assert verdict["speedup"] > 0
    assert all(
        c["status"] == "correct" and c["time_ms"] > 0 and c["baseline_ms"] > 0 for c in verdict["configs"]
    )
    assert any(c["hidden"] for c in verdict["configs"])
    assert verdict["skipped_configs"], "the largest softmax config is too big for a CPU run"


@pytest.mark.slow
def test_wrong_kernel_is_incorrect_with_exit_code_1() -> None:
    result = run_cli(
        "eval",
        str(SOLUTIONS / "softmax_cpu_unnormalised.py"),
        "--task",
        "level1/softmax",
        "--device",
        "cpu",
        "--json",
        "--no-timing",
    )
    assert result.returncode == 1
    verdict = json.loads(result.stdout)
    assert verdict["status"] == "incorrect"
    assert "values differ" in verdict["reason"]
    assert verdict["speedup"] is None
    failing, *after = verdict["configs"]
    assert failing["mismatch"]["first"]
    # The cascade stopped at the first config: the others never ran, and say so rather than "correct".
    assert after and all(c["status"] == "not_checked" and c["seeds_checked"] == 0 for c in after)
    assert all("checking stopped at config 0 (incorrect)" in c["reason"] for c in after)
    assert cudasmith.Verdict.from_dict(verdict).configs[1].status == "not_checked"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["eval", "no/such/solution.py", "--task", "level1/softmax", "--device", "cpu"],
            "solution file not found",
        ),
        (
            ["eval", str(EXAMPLES / "softmax_cpu.py"), "--task", "level1/nope", "--device", "cpu"],
            "unknown task",
        ),
        (
            ["eval", str(EXAMPLES / "softmax_cpu.py"), "--problem", "missing.py", "--device", "cpu"],
            "not found",
        ),
        (["eval", str(EXAMPLES / "softmax_cpu.py"), "--device", "cpu"], "exactly one of"),
        (
            ["eval", str(EXAMPLES / "softmax_cpu.py"), "--task", "level1/softmax", "--device", "tpu"],
            "device must",
        ),
    ],
)
def test_bad_usage_gives_one_line_error_and_exit_code_2(args: list[str], message: str) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == ""


@pytest.mark.slow
def test_kernelbench_format_problem_evaluates() -> None:
    verdict = evaluate(
        SOLUTIONS / "vector_add_cpu.py", problem=PROBLEMS / "kernelbench_style_add.py", device="cpu"
    )
    assert verdict.status == "correct", verdict.reason
    assert [c.config for c in verdict.configs] == [{}]
    assert verdict.reason.startswith("correct on 1 config, 4 input sets;"), "counted in the singular"
    assert verdict.configs[0].speedup is not None


@pytest.mark.slow
def test_honest_kernel_is_correct_on_every_config_and_seed() -> None:
    verdict = quick("vector_add_cpu.py")
    assert verdict.status == "correct", verdict.reason
    assert all(c.seeds_checked == 3 for c in verdict.configs)  # two seeds, one harness-drawn input set
    assert {c.hidden for c in verdict.configs} == {False, True}
    assert verdict.device.endswith("cores)")


@pytest.mark.slow
def test_dropping_the_tail_is_caught_only_where_sizes_are_odd() -> None:
    verdict = quick("vector_add_misses_tail.py")
    assert verdict.status == "incorrect"
    statuses = [c.status for c in verdict.configs]
    assert statuses[0] == "incorrect"  # n = 1000 is not a multiple of 32


@pytest.mark.slow
@pytest.mark.parametrize(
    ("solution", "status", "words"),
    [
        ("c_compile_error.py", "compile_error", "missing"),
        ("python_syntax_error.py", "compile_error", "does not parse"),
        (
            "raises_in_forward.py",
            "runtime_error",
            "ValueError: the kernel was not written yet (raises_in_forward.py:",
        ),
        ("wrong_shape.py", "incorrect", "shape [1001], expected [1000]"),
        ("no_model_new.py", "compile_error", "no class ModelNew"),
        ("segfaults.py", "runtime_error", "SIGSEGV"),
    ],
)
def test_failures_get_their_status_and_a_reason(solution: str, status: str, words: str) -> None:
    verdict = quick(solution)
    assert verdict.status == status, verdict.reason
    assert words in verdict.reason
    assert "\n" not in verdict.reason


@pytest.mark.parametrize(
    ("solution", "words"),
    [
        ("no_model_new.py", "the solution defines no class ModelNew"),
        ("vector_add_cuda.py", "a CUDA solution needs --device cuda"),
    ],
)
def test_a_solution_that_cannot_load_gets_one_line_and_no_judge_traceback(
    solution: str, words: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The workers inherit this: no GPU is visible to them even on a machine that has one.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    verdict = quick(solution)
    assert verdict.status == "compile_error" and verdict.reason.startswith(words), verdict.reason
    assert "arch=" not in verdict.reason
    assert not verdict.artifacts.get("traceback"), "the judge's own finding has no traceback to show"
    out = io.StringIO()
    print_verdict(verdict, Console(file=out, width=200))
    assert "CandidateFault" not in out.getvalue() and "traceback" not in out.getvalue()


@pytest.mark.slow
def test_a_problem_too_large_for_the_worker_says_its_size_and_the_option_once() -> None:
    # A worker with torch imported fits in 0.75 GiB; 512 MiB of inputs and 256 MiB of output do not.
    solution, problem = str(SOLUTIONS / "vector_add_cpu.py"), str(PROBLEMS / "add_256mib.py")
    options = ("--device", "cpu", "--no-timing", "--memory-limit", "0.75")
    result = run_cli("eval", solution, "--problem", problem, *options)
    assert result.returncode == 2, result.stderr
    # Besides the progress lines, the estimate of the config's check (check_time.py) may come first.
    said = [line for line in without_progress(result.stderr).splitlines() if not line.startswith("warning: ")]
    error = " ".join(" ".join(said).split())
    assert error.startswith("error: config 0 {'n': 67108864} (512 MiB in, 256 MiB out"), error
    assert "host memory limit of 768 MiB; --memory-limit raises it" in error
    assert error.count("memory") == 2 and error.count("running the reference") == 0


@pytest.mark.slow
def test_peaks_measured_before_are_read_without_a_word_of_measuring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDASMITH_CACHE", str(tmp_path))
    rates = ({"float32": 0.5}, {"float32": 0.25})
    save_peaks(DevicePeaks(device_name("cpu"), "cpu", 20.0, *rates, 2**25, versions=software_versions()))
    solution, problem = SOLUTIONS / "optimize" / "add_fast.py", PROBLEMS / "add_small.py"
    done = run_cli(
        "eval", str(solution), "--problem", str(problem), "--device", "cpu", "--seeds", "1", "--json"
    )
    assert done.returncode == 0, done.stderr
    assert "timing eager PyTorch" in done.stderr, "the progress lines are there"
    assert "measuring" not in done.stderr, done.stderr
    assert json.loads(done.stdout)["peaks"]["measured_at"] == "", "the verdict used the kept peaks"


@pytest.mark.slow
def test_errors_name_the_solution_as_given_never_its_scratch_copy() -> None:
    solutions = [SOLUTIONS / "python_syntax_error.py", SOLUTIONS / "raises_in_forward.py"]
    options = ("--problem", str(PROBLEMS / "add_small.py"), "--device", "cpu", "--no-timing", "--seeds", "1")
    done = run_cli("eval", *map(str, solutions), *options, "--json")
    assert done.returncode == 1, done.stderr
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert [v["status"] for v in verdicts] == ["compile_error", "runtime_error"]
    for verdict, path in zip(verdicts, solutions, strict=True):
        assert "cudasmith-scratch" not in json.dumps(verdict), "the judge's scratch folder is never shown"
        assert f'File "{path}", line ' in verdict["artifacts"]["traceback"], verdict["artifacts"]


def test_a_compile_error_keeps_the_whole_compiler_log() -> None:
    verdict = quick("c_compile_error.py")
    assert verdict.status == "compile_error"
    assert "missing" in verdict.artifacts["compile_log"] and "error" in verdict.artifacts["compile_log"]


@pytest.mark.slow
def test_a_forward_that_never_returns_times_out_and_is_killed() -> None:
    verdict = quick("loops_forever.py", call_timeout_s=5.0, first_call_extra_s=0.0)
    assert verdict.status == "timeout"
    assert "no answer within 5 s" in verdict.reason


@pytest.mark.slow
def test_verdict_json_round_trips_and_hides_hidden_configs() -> None:
    verdict = quick("vector_add_cpu.py")
    data = json.loads(json.dumps(verdict.to_dict()))
    hidden = [c for c in data["configs"] if c["hidden"]]
    problem = load_task("level1/vector_add")
    assert hidden and all(c["config"].startswith("hidden#") for c in hidden)
    assert str(problem.hidden_configs[0]["n"]) not in json.dumps(data)


@pytest.mark.slow
def test_same_seed_reproduces_the_same_errors() -> None:
    first = evaluate(EXAMPLES / "softmax_cpu.py", task="level1/softmax", options=EvalOptions(**QUICK, seed=7))
    second = evaluate(
        EXAMPLES / "softmax_cpu.py", task="level1/softmax", options=EvalOptions(**QUICK, seed=7)
    )
    assert [c.rel_err for c in first.configs] == [c.rel_err for c in second.configs]
