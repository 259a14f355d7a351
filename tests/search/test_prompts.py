"""Prompts: public configs only, the right contract per device, hardware facts, overridable templates,
and refinement feedback from real verdicts."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

import cudasmith
from cudasmith.device import DevicePeaks
from cudasmith.errors import ProblemError, UsageError
from cudasmith.hardware import gpu_device
from cudasmith.search.feedback import (
    trim_compiler_output,
    trim_traceback,
    verdict_feedback,
    verdict_from_dict,
)
from cudasmith.search.hardware import Hardware, describe_hardware, gpu_facts, measured_facts, peak_figures
from cudasmith.search.prompts import Parent, PromptBuilder
from cudasmith.tasks import list_task_names, load_task
from cudasmith.tasks.hidden import for_session
from cudasmith.tasks.problem import load_problem

from conftest import PROBLEMS, SOLUTIONS

H100_LIKE = SimpleNamespace(
    name="NVIDIA H100 80GB HBM3",
    major=9,
    minor=0,
    multi_processor_count=132,
    warp_size=32,
    max_threads_per_multi_processor=2048,
    shared_memory_per_block=48 * 1024,
    shared_memory_per_block_optin=227 * 1024,
    shared_memory_per_multiprocessor=228 * 1024,
    L2_cache_size=50 * 1024**2,
    total_memory=80 * 1024**3,
    memory_clock_rate=2_619_000,
    memory_bus_width=5120,
)
H100 = gpu_device("cuda:0", H100_LIKE, {"registers_per_block": 65536})
GPU = Hardware("cuda", H100_LIKE.name, tuple(gpu_facts(H100)), "sm_90a")


@pytest.mark.parametrize("task", list_task_names())
def test_prompts_show_public_configs_and_never_hidden_ones(task: str) -> None:
    problem = load_task(task)
    prompt = PromptBuilder().build(problem, "cpu")
    text = prompt.system + prompt.user
    assert "HIDDEN_CONFIGS" not in text
    for config in problem.configs:
        assert json.dumps(config) in text
    for config in problem.hidden_configs:  # as declared (ranges), and as a session draws them
        assert repr(config) not in text
    for config in for_session(problem, 7).hidden_configs:
        assert json.dumps(config) not in text and repr(config) not in text
    assert "class Model(nn.Module)" in text
    assert problem.description in text


def test_the_task_block_has_dtype_tolerance_and_rules() -> None:
    user = PromptBuilder().build(load_task("level1/softmax"), "cpu").user
    assert "- dtype: float32" in user
    assert "rtol = 0.0001, atol = 1e-05" in user and "<= 1e-05" in user
    assert "10x the error that the PyTorch reference itself makes in float32" in user
    assert "x: float32[1021, 4097]" in user, "input shapes, worked out on meta tensors"
    assert "no caching of results across calls" in user
    assert "Do not modify the inputs" in user


def test_the_contract_and_example_follow_the_device() -> None:
    problem = load_task("level1/softmax")
    cpu = PromptBuilder().build(problem, "cpu")
    gpu = PromptBuilder().build(problem, "cuda", hardware=GPU)
    assert "compile_c(SOURCE" in cpu.user and "compile_cuda" not in cpu.user
    assert "-fopenmp" in cpu.user and "write the\nkernels in C" in cpu.user
    assert "compile_cuda(SOURCE" in gpu.user and "for sm_90a" in gpu.user
    assert "CUDA kernels" in gpu.system and "C kernels" in cpu.system
    assert "- streaming multiprocessors (SMs): 132" in gpu.user


def test_gpu_facts_from_device_properties() -> None:
    facts = dict(
        gpu_facts(gpu_device("cuda:0", H100_LIKE, {"registers_per_block": 65536, "max_blocks_per_sm": 32}))
    )
    assert facts["compute capability"] == "9.0; kernels are compiled for sm_90a"
    assert "wgmma" in facts["what it enables"] and "TMA" in facts["what it enables"]
    assert facts["shared memory per block (opt-in, dynamic)"] == "227 KiB"
    assert facts["L2 cache"] == "50 MiB"
    assert facts["32-bit registers per block"] == "65536"
    # 2 transfers per clock × 2.619 GHz × 640 bytes
    assert facts["DRAM bandwidth (theoretical: memory clock × bus width)"] == "3352 GB/s"
    ampere = dict(
        gpu_facts(gpu_device("cuda:0", SimpleNamespace(**{**vars(H100_LIKE), "major": 8, "minor": 6}), {}))
    )
    assert H100.theoretical_memory_gb_per_s == pytest.approx(3352.3, abs=0.1), "one home for the formula"
    assert H100.cache_bytes == 50 * 2**20
    assert ampere["what it enables"].startswith("Ampere") and "32-bit registers per block" not in ampere


def test_measured_figures_appear_only_when_given() -> None:
    assert measured_facts({}) == []
    assert measured_facts({"dram_bandwidth_gbs": 4312.5}) == [("measured DRAM bandwidth", "4312 GB/s")]
    cpu = describe_hardware("cpu", measured={"fp32_tflops": 1.25})
    labels = [label for label, _ in cpu.facts]
    assert labels[:2] == ["CPU", "cores available"] and labels[-1] == "measured FP32 peak"
    assert not any("GB/s" in value for _, value in cpu.facts)


def test_measured_peaks_keep_their_units_and_only_what_was_measured() -> None:
    gpu = DevicePeaks(
        device="test GPU",
        kind="cuda",
        memory_gb_per_s=3012.6,
        matrix_tflops={"float32": 51.0, "tf32": 370.0, "bfloat16": 702.0, "float64": 52.0},
        vector_tflops={"float32": 60.2, "float16": 120.0},
        cache_bytes=50 * 2**20,
    )
    figures = dict(measured_facts(peak_figures(gpu)))
    assert figures == {
        "measured DRAM bandwidth": "3013 GB/s",
        "measured FP32 peak": "60.2 TFLOP/s",  # the faster of matrix and vector units
        "measured FP64 peak": "52 TFLOP/s",
        "measured TF32 tensor-core peak": "370 TFLOP/s",
        "measured BF16 tensor-core peak": "702 TFLOP/s",
    }, "FP16 was measured on vector units only: no tensor-core figure"


def test_user_templates_replace_the_built_in_ones(tmp_path: Path) -> None:
    (tmp_path / "rules.md").write_text("## House rules for $task_name\n\nNo PyTorch, and costs in $$.\n")
    prompt = PromptBuilder(tmp_path).build(load_task("level1/relu"), "cpu")
    assert "## House rules for level1/relu\n\nNo PyTorch, and costs in $." in prompt.user
    assert "A solution that breaks one of these" not in prompt.user
    assert "## What to write" in prompt.user, "templates the user did not replace stay"
    (tmp_path / "answer.md").write_text("Answer in $language.\n")
    with pytest.raises(UsageError, match=r"unknown placeholder \$language"):
        PromptBuilder(tmp_path).build(load_task("level1/relu"), "cpu")
    with pytest.raises(UsageError, match="templates directory not found"):
        PromptBuilder(tmp_path / "missing")


def test_a_hidden_config_that_would_leak_is_refused(tmp_path: Path) -> None:
    """A fixed hidden config (KernelBench's way) that the problem's own text names is refused."""
    source = (Path(load_task("level1/vector_add").path)).read_text()
    hidden = {"n": 3000017}
    source = re.sub(r"HIDDEN_CONFIGS = .*", f"HIDDEN_CONFIGS = [{hidden!r}]", source)
    leaky = tmp_path / "leaky.py"
    leaky.write_text(f'"""Adds vectors; try {json.dumps(hidden)} too."""\n' + source.split('"""', 2)[2])
    with pytest.raises(ProblemError, match="would show a hidden config"):
        PromptBuilder().build(load_problem(leaky), "cpu")


@pytest.mark.slow
def test_refinement_prompt_shows_parent_verdict_and_mismatch() -> None:
    solution = SOLUTIONS / "softmax_cpu_unnormalised.py"
    verdict = cudasmith.evaluate(
        solution, task="level1/softmax", device="cpu", timing=False, seeds_per_config=1
    )
    assert verdict.status == "incorrect"
    round_trip = verdict_from_dict(json.loads(json.dumps(verdict.to_dict())))
    prompt = PromptBuilder().build(
        load_task("level1/softmax"), "cpu", parent=Parent(solution.read_text(), round_trip)
    )
    assert solution.read_text().strip() in prompt.user
    assert "Verdict: **incorrect**" in prompt.user
    # The first wrong value is where the drawn inputs put it: a small one can sit within the tolerance.
    assert "Mismatch on config 0" in prompt.user
    assert re.search(r"first wrong values: at \[\d+, \d+\] expected", prompt.user), prompt.user
    assert "It computes a wrong answer" in prompt.user
    assert "<<<<<<< SEARCH" in prompt.user
    assert "| 0 | " in prompt.user, "the per-config table"


COMPILE_TRACEBACK = """Traceback (most recent call last):
  File "/site-packages/cudasmith/harness/workers/worker.py", line 231, in serve
    header, tensors = worker.handle(request)
                      ^^^^^^^^^^^^^^^^^^^^^^
  File "<frozen importlib._bootstrap>", line 241, in _call_with_frames_removed
  File "/runs/ask-1/candidate_0.py", line 7, in <module>
    vector_add = compile_c(
                 ^^^^^^^^^^
  File "/site-packages/cudasmith/runtime/cpu.py", line 117, in compile_c
    raise CompileError(f"{Path(compiler).name}: {_first_error(log)}", log=log)
cudasmith.errors.CompileError: gcc: kernel.c:1:71: error: 'missing' undeclared (first use in this function)
"""


def test_compile_errors_and_tracebacks_are_trimmed_to_what_matters() -> None:
    assert trim_compiler_output(COMPILE_TRACEBACK) == (
        "cudasmith.errors.CompileError: gcc: kernel.c:1:71: error: 'missing' undeclared (first use in this function)"
    )
    log = 'kernel.cu(3): error: identifier "missing" is undefined\n    y[i] = missing;\n           ^\n\n1 error detected'
    assert trim_compiler_output(log).splitlines()[:3] == log.splitlines()[:3]
    trimmed = trim_traceback(COMPILE_TRACEBACK)
    assert 'File "/runs/ask-1/candidate_0.py", line 7' in trimmed
    assert "worker.py" not in trimmed and "frozen" not in trimmed and "^^^" not in trimmed
    assert trimmed.endswith("(first use in this function)")


def test_feedback_of_a_compile_error_verdict() -> None:
    verdict = verdict_from_dict(
        {
            "status": "compile_error",
            "reason": "gcc: kernel.c:1:71: error: 'missing' undeclared",
            "artifacts": {"traceback": COMPILE_TRACEBACK},
        }
    )
    text = verdict_feedback(verdict)
    assert text.startswith("Verdict: **compile_error**")
    assert "Compiler output (trimmed):" in text and "worker.py" not in text
    with pytest.raises(UsageError, match="not a verdict"):
        verdict_from_dict({"speedup": 2.0})


def test_a_task_with_a_validator_is_described_as_judged_by_it(tmp_path: Path) -> None:
    problem_file = tmp_path / "any_order.py"
    problem_file.write_text(
        (PROBLEMS / "kernelbench_style_add.py").read_text()
        + "\n\ndef validate(inputs, output, reference):\n    return None\n"
    )
    user = PromptBuilder().build(load_problem(problem_file), "cpu").user
    assert "the task's own validator judges them: any answer it accepts is correct" in user
    assert "rtol" not in user


def test_hidden_configs_are_promised_only_where_the_problem_has_them() -> None:
    kernelbench = PromptBuilder().build(load_problem(PROBLEMS / "kernelbench_style_add.py"), "cpu")
    text = kernelbench.system + kernelbench.user
    assert "hidden" not in text.lower(), "a KernelBench file has no hidden configs"
    assert "`get_inputs()` the arguments of `forward`: inputs a: float32[4099], b: float32[4099]." in text
    assert "random inputs of the shapes shown" in text and "must hold for any valid shape" in text
    suite = PromptBuilder().build(load_task("level1/softmax"), "cpu")
    assert "some shapes are hidden from you" in suite.system
    assert "Hidden configs (1) with other sizes (odd ones included) are checked too" in suite.user
    assert "hidden configs use others" in suite.user
