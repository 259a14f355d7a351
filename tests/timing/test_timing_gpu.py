"""The timing protocol on a GPU: launch overhead left out, work on every stream counted, patched timers
ignored, calls that synchronise, CUDA graphs, cold against hot L2, sensitivity, peaks and baselines."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import pytest
import torch

from cudasmith import evaluate
from cudasmith.device.launch_cost import ensure_launch_cost, find_ncu
from cudasmith.timing.measure import measure
from cudasmith.timing.protocol import CallHooks, TimingPlan, default_plan

from conftest import SOLUTIONS

pytestmark = pytest.mark.gpu

SOURCE = r"""
extern "C" __global__ void add(const float* a, const float* b, float* out, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
"""
# ~50 µs on an H100 (192 MiB moved): long enough that every timer should see it clearly.
BIG = 2**24
# ~2 µs: a kernel whose time per-call CUDA events overstate by the launch overhead.
TINY = 2**16


def add_launcher(
    n: int, stream: torch.cuda.Stream | None = None, sets: int = 2
) -> Callable[[int], torch.Tensor]:
    from cudasmith.runtime import compile_cuda

    kernel = compile_cuda(SOURCE, "add")
    tensors = [[torch.randn(n, device="cuda") for _ in range(3)] for _ in range(sets)]

    def run(index: int) -> torch.Tensor:
        a, b, out = tensors[index]
        kernel(a, b, out, n, grid=(n + 255) // 256, block=256, stream=stream)
        return out

    return run


def per_call_events_ms(run: Callable[[int], object], calls: int = 100) -> float:
    """KernelBench's way: mean of CUDA-event pairs around single calls."""
    times = []
    for _ in range(calls):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run(0)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.fmean(times)


def test_a_tiny_kernel_is_timed_without_its_launch_overhead() -> None:
    run = add_launcher(TINY)
    ours = measure(run, 2, "cuda", default_plan("cuda"))
    assert ours.method.startswith("cupti"), ours.warnings
    assert ours.clock_mhz and 300 < statistics.median(ours.clock_mhz) < 4000
    per_call = per_call_events_ms(run)
    print(f"tiny add: ours {ours.median_ms * 1e3:.2f} µs, per-call events {per_call * 1e3:.2f} µs")
    assert ours.median_ms < per_call
    assert ours.median_ms < 0.015


def test_work_on_a_stream_nobody_waits_for_is_counted() -> None:
    honest = measure(add_launcher(BIG), 2, "cuda", default_plan("cuda"))
    hidden = measure(add_launcher(BIG, stream=torch.cuda.Stream()), 2, "cuda", default_plan("cuda"))
    print(
        f"side stream: {hidden.median_ms * 1e3:.1f} µs vs {honest.median_ms * 1e3:.1f} µs on the timing stream"
    )
    assert hidden.method.startswith("cupti"), hidden.warnings
    assert hidden.median_ms == pytest.approx(honest.median_ms, rel=0.15)
    assert hidden.summary()["event_median_ms"] < 0.5 * hidden.median_ms  # events alone would miss it


def test_timers_patched_after_import_change_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    run = add_launcher(BIG)
    before = measure(run, 2, "cuda", default_plan("cuda"))
    real = time.perf_counter
    monkeypatch.setattr(time, "perf_counter", lambda: real() / 1000)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda.Event, "elapsed_time", lambda self, end: 1e-6)
    monkeypatch.setattr(torch.cuda.Event, "record", lambda self, stream=None: None)
    after = measure(run, 2, "cuda", default_plan("cuda"))
    assert after.median_ms == pytest.approx(before.median_ms, rel=0.1)
    assert statistics.median(after.event_ms) == pytest.approx(statistics.median(before.event_ms), rel=0.2)


def test_a_call_that_synchronises_is_timed_unqueued() -> None:
    add = add_launcher(BIG)

    def run(index: int) -> torch.Tensor:
        out = add(index)
        out[:1].item()  # waits for the GPU: it would wait forever behind the blocking kernel
        return out

    result = measure(run, 2, "cuda", TimingPlan(max_seconds=1.0))
    assert result.method in ("cupti, unqueued", "cupti+launch, unqueued")
    assert any("waits for the GPU" in warning for warning in result.warnings)
    assert result.median_ms > 0.01


def test_cuda_graph_replays_are_timed_and_their_outputs_shown() -> None:
    add = add_launcher(TINY)

    def twice(index: int) -> torch.Tensor:
        add(index)
        return add(index) * 2  # a PyTorch kernel after ours: two kernels per call

    outputs = {}

    class Keep(CallHooks):
        def after(self, sample: int | None, index: int, output: torch.Tensor, kept: bool) -> None:
            outputs[index] = output.clone()

    result = measure(twice, 2, "cuda", TimingPlan(launch="graph"), Keep())
    assert result.plan.launch == "graph" and result.median_ms > 0
    assert result.method in ("cupti", "cupti+launch", "cuda-events"), result.warnings
    for index, out in outputs.items():
        assert torch.equal(out, twice(index))


def test_cold_l2_is_slower_than_hot_for_data_that_fits_in_l2() -> None:
    run = add_launcher(2**21)  # 24 MiB moved per call
    cold = measure(run, 1, "cuda", default_plan("cuda", "cold"))
    hot = measure(run, 1, "cuda", default_plan("cuda", "hot"))
    print(f"24 MiB add: cold {cold.median_ms * 1e3:.2f} µs, hot {hot.median_ms * 1e3:.2f} µs")
    assert hot.median_ms < cold.median_ms


def test_five_percent_more_work_is_slower_with_intervals_apart() -> None:
    base = measure(add_launcher(BIG), 2, "cuda", default_plan("cuda"))
    more = measure(add_launcher(BIG * 105 // 100), 2, "cuda", default_plan("cuda"))
    assert more.ci95_ms[0] > base.ci95_ms[1], (base.ci95_ms, more.ci95_ms)


def test_gpu_peaks_are_plausible_and_make_a_roofline() -> None:
    from cudasmith.device.speed_of_light import measure_peaks
    from cudasmith.harness.wire.results import ConfigDescription
    from cudasmith.harness.witnesses.roofline import roofline

    peaks = measure_peaks("cuda")
    print(peaks)
    assert 200 < peaks.memory_gb_per_s < 20_000
    assert peaks.matrix_tflops["bfloat16"] > peaks.matrix_tflops["float32"] > 1
    assert peaks.vector_tflops["float32"] > 1 and peaks.cache_bytes > 2**20
    point = roofline(ConfigDescription(input_bytes=8 * BIG, output_bytes=4 * BIG), "float32", peaks)
    assert point is not None and point.bound == "memory" and 0 < point.floor_ms < point.sol_ms


def test_side_stream_work_is_counted_and_must_be_waited_for() -> None:
    options = {"device": "cuda", "seeds_per_config": 1, "baselines": ("eager",), "seed": 3}
    honest = evaluate(SOLUTIONS / "vector_add_cuda.py", task="level1/vector_add", **options)
    joined = evaluate(SOLUTIONS / "vector_add_side_stream_joined.py", task="level1/vector_add", **options)
    assert honest.status == joined.status == "correct", joined.reason
    largest = max(range(len(honest.configs)), key=lambda i: honest.configs[i].time_ms)
    assert joined.configs[largest].time_ms == pytest.approx(honest.configs[largest].time_ms, rel=0.2)
    # The same kernel with nothing joining its stream back: the output is not ready when forward returns.
    racy = evaluate(SOLUTIONS / "vector_add_side_stream.py", task="level1/vector_add", **options)
    assert racy.status == "rejected" and "unsynchronised side stream" in racy.reason, racy.reason
    assert honest.configs[largest].sol_pct and 10 < honest.configs[largest].sol_pct < 130


def test_verdicts_carry_compile_baselines_and_the_roofline() -> None:
    verdict = evaluate(
        SOLUTIONS / "vector_add_cuda.py",
        task="level1/vector_add",
        device="cuda",
        baselines=("eager", "compile"),
    )
    assert verdict.status == "correct", verdict.reason
    assert set(verdict.speedups) == {"eager", "compile"}
    for config in verdict.configs:
        assert (config.baselines["compile"].time_ms or 0) > 0 and config.roofline is not None
        assert config.timing and config.timing.method.startswith("cupti")
    print({name: round(value, 2) for name, value in verdict.speedups.items()}, verdict.notes)


@pytest.mark.skipif(find_ncu() is None, reason="Nsight Compute (ncu) is not installed")
def test_the_launch_cost_is_calibrated_with_ncu_and_added_once_per_call() -> None:
    cost = ensure_launch_cost(remeasure=True)
    print(
        f"launch cost {cost.launch_us:.2f} µs (ncu {cost.ncu_empty_us:.2f} µs, CUPTI {cost.cupti_empty_us:.2f} µs "
        "on an empty kernel)"
    )
    assert 0.0 < cost.launch_us < 5.0 and cost.ncu_empty_us > cost.cupti_empty_us
    run = add_launcher(TINY)
    ours = measure(run, 2, "cuda", default_plan("cuda", launch_us=cost.launch_us))
    assert ours.method == "cupti+launch", ours.warnings
    assert ours.samples_ms == pytest.approx([s + cost.launch_us / 1e3 for s in ours.span_ms])
    bare = measure(run, 2, "cuda", default_plan("cuda"))
    assert bare.method == "cupti" and not bare.span_ms
