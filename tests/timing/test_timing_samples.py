"""The GPU sampler's logic on a made-up GPU (no GPU needed): the stop rule reads the CUPTI spans reported,
a chunk at a time; records that lose a sample fall back to events; persisting L2 lines are let go before
every flush of a cold sample."""

from __future__ import annotations

import contextlib
import random
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from cudasmith.timing import clock, cuda, l2
from cudasmith.timing.activity import Activity
from cudasmith.timing.graphs import GRAPH_WARMUP_CALLS
from cudasmith.timing.protocol import CallHooks, TimingError, TimingPlan, WorkTotal
from cudasmith.timing.spans import SpanLog

READ, BLOCKER, CLOSE = cuda.READ, cuda.BLOCKER, cuda.CLOSE
# The made-up kernel: 3 µs on the GPU, give or take a nanosecond; its CUDA-event times spread by 8 %
# around 5 µs, as on an H100 (timing_fidelity.py).
KERNEL_NS = 3_000
EVENT_SPREAD = 0.08
# Samples stop at the minimum count when the noise target is read on spans; at this cap on events, which
# need about 130 samples to show 0.5 %.
PLAN = TimingPlan(warmup_calls=1, warmup_ms=0.0, min_sampling_s=0.0, max_samples=60, max_seconds=30.0)


class FakeGpu:
    """Kernels laid on a timeline as they are launched; CUPTI recorders that see what ran meanwhile."""

    def __init__(self, drop_sample: int | None = None) -> None:
        self.now_ns = 0
        self.timeline: list[Activity] = []
        self.log: list[str] = []
        self.words = SimpleNamespace(host=[0, 0, 0, 0], device=0)
        self.recorders = 0
        self.samples = 0
        self.drop_sample = drop_sample
        self.noise = random.Random(0)
        self.driver = SimpleNamespace(
            reset=lambda: self._did("reset"),
            get_limit=lambda limit: (0, 4 << 20),
            set_limit=lambda limit, value: self._did(f"limit {value}"),
            set_stream_attribute=lambda stream, attribute, value: self._did("clear window"),
            device_attribute=lambda attribute, device: (0, 30 << 20),
            get_device=lambda: (0, 0),
            stream=lambda handle: handle,
            limit="persisting",
            window="window",
            no_window=None,
            max_persisting="max persisting",
        )

    def _did(self, what: str) -> tuple[int]:
        self.log.append(what)
        return (0,)

    def launch(self, kernel: str, *args: Any, grid: Any, block: Any, stream: int = 0) -> None:
        duration = {READ: 30_000, BLOCKER: 20_000, CLOSE: 1_000}.get(kernel, KERNEL_NS)
        if kernel == BLOCKER:
            self.samples += 1
            self.words.host[2], self.words.host[3] = 20_000, 39_600  # spun 20 µs at 1980 MHz
        self.log.append(kernel)
        self.timeline.append(Activity(kernel, self.now_ns, self.now_ns + duration))
        self.now_ns += duration + 500

    def call(self, index: int) -> torch.Tensor:
        self.launch("work", grid=1, block=1)
        return torch.zeros(1)

    def event_ms(self, start: Any, end: Any) -> float:
        return 0.005 * (1 + self.noise.uniform(-EVENT_SPREAD, EVENT_SPREAD))

    def recorder(self) -> Any:
        gpu, begin = self, len(self.timeline)

        class Recorder:
            def stop(self) -> list[Activity]:
                seen = gpu.timeline[begin:]
                if gpu.drop_sample is not None:
                    openings = [a for a in seen if a.name == READ]
                    if len(openings) > 1:  # a chunk in which CUPTI missed the last sample's flush
                        seen = [a for a in seen if a is not openings[-1]]
                return seen

        self.recorders += 1
        return Recorder()


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> FakeGpu:
    fake = FakeGpu()
    kit = SimpleNamespace(
        blocker=BLOCKER,
        close=CLOSE,
        words=fake.words,
        max_clock_mhz=1980.0,
        check_throttle=True,
        prepare_flush=lambda: None,
        flush=lambda stream: fake.launch(READ, grid=1, block=1, stream=stream),
    )
    monkeypatch.setattr(cuda, "tools", lambda index: kit)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(clock, "launch_kernel", fake.launch)
    monkeypatch.setattr(clock, "cuda_synchronize", lambda: fake.log.append("sync"))
    monkeypatch.setattr(clock, "current_stream", lambda: SimpleNamespace(cuda_stream=7))
    monkeypatch.setattr(clock, "Event", lambda enable_timing: object())
    monkeypatch.setattr(clock, "event_record", lambda event, stream: None)
    monkeypatch.setattr(clock, "event_elapsed_ms", fake.event_ms)
    monkeypatch.setattr(l2, "CAPTURED", fake.driver)
    monkeypatch.setattr("cudasmith.timing.spans.ActivityRecorder", fake.recorder)
    return fake


def test_the_stop_rule_reads_spans_and_stops_at_the_first_checkpoint(gpu: FakeGpu) -> None:
    measurement = cuda.measure_cuda(gpu.call, 2, PLAN, CallHooks())
    assert measurement.stop == "noise target" and measurement.method == "cupti"
    assert len(measurement.samples_ms) == PLAN.min_samples, "one checkpoint, at the minimum count"
    assert measurement.median_ms == pytest.approx(KERNEL_NS / 1e6)
    assert gpu.recorders == 1
    assert set(measurement.phases_s) == {"warmup", "sampling", "records", "prepare", "discarded"}
    assert measurement.phases_s["discarded"] == 0.0, "no sample was throttled"
    assert measurement.work["work"].calls == PLAN.min_samples


def test_with_events_alone_the_same_kernel_samples_to_the_cap(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_cupti() -> Any:
        raise RuntimeError("CUPTI is not here")

    monkeypatch.setattr("cudasmith.timing.spans.ActivityRecorder", no_cupti)
    measurement = cuda.measure_cuda(gpu.call, 2, PLAN, CallHooks())
    assert measurement.method == "cuda-events" and measurement.stop == "max samples"
    assert any("CUPTI unavailable" in w for w in measurement.warnings)


def test_noisy_spans_are_read_again_as_samples_grow(gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch) -> None:
    noise = random.Random(1)

    def noisy_call(index: int) -> torch.Tensor:
        gpu.launch("work", grid=1, block=1)
        stretch = round(KERNEL_NS * noise.uniform(0.0, 0.1))  # a 10 % spread: the target needs ~50 samples
        gpu.timeline[-1] = Activity("work", gpu.timeline[-1].start_ns, gpu.timeline[-1].end_ns + stretch)
        return torch.zeros(1)

    measurement = cuda.measure_cuda(noisy_call, 2, replace(PLAN, max_samples=400), CallHooks())
    assert measurement.method == "cupti" and measurement.stop == "noise target"
    assert gpu.recorders > 2 and measurement.rel_stderr <= PLAN.target_rel_stderr
    assert len(measurement.samples_ms) < 400


def test_a_chunk_that_lost_a_sample_falls_back_to_events_and_says_so(gpu: FakeGpu) -> None:
    gpu.drop_sample = 0
    measurement = cuda.measure_cuda(gpu.call, 2, PLAN, CallHooks())
    assert measurement.method == "cuda-events"
    assert any(w.startswith("CUPTI saw") and "samples of" in w for w in measurement.warnings)


def test_persisting_lines_are_let_go_before_every_flush_and_the_limit_restored(gpu: FakeGpu) -> None:
    measurement = cuda.measure_cuda(gpu.call, 2, PLAN, CallHooks())
    flushes = [i for i, what in enumerate(gpu.log) if what == READ]
    assert len(flushes) == gpu.samples == len(measurement.samples_ms)
    for at in flushes:
        assert gpu.log[at - 3 : at] == ["sync", "reset", "clear window"], gpu.log[at - 4 : at + 1]
    limits = [what for what in gpu.log if what.startswith("limit")]
    assert limits == ["limit 0", f"limit {4 << 20}"], "set-aside 0 while sampling, then as it was"
    assert gpu.log.index("limit 0") < flushes[0] and gpu.log.index(f"limit {4 << 20}") > flushes[-1]


def test_a_hot_measurement_leaves_persisting_lines_alone(gpu: FakeGpu) -> None:
    measurement = cuda.measure_cuda(gpu.call, 2, replace(PLAN, l2_state="hot"), CallHooks())
    assert measurement.stop == "noise target"
    assert not {"reset", "clear window", READ} & set(gpu.log)


def test_the_guard_does_nothing_without_persisting_l2_and_stops_after_a_failure() -> None:
    calls: list[str] = []
    driver = FakeGpu().driver
    driver.device_attribute = lambda attribute, device: (0, 0)  # before Ampere: no persisting L2
    idle = l2.PersistingL2(driver)
    idle.hold()
    idle.before_sample(0)
    idle.release()
    assert not idle.active and not idle.warnings
    failing = FakeGpu().driver
    failing.reset = lambda: (calls.append("reset"), 700)[1:]
    guard = l2.PersistingL2(failing)
    guard.hold()
    guard.before_sample(0)
    guard.before_sample(0)
    guard.release()
    assert (
        calls == ["reset"] and len(guard.warnings) == 1 and "may have survived the flush" in guard.warnings[0]
    )
    quiet = FakeGpu()
    quiet.driver.set_stream_attribute = lambda stream, attribute, value: (1,)  # the legacy default stream
    kept = l2.PersistingL2(quiet.driver)
    kept.before_sample(0)
    kept.before_sample(0)
    assert quiet.log == ["reset", "reset"] and kept.active and not kept.warnings


def test_span_log_gives_each_chunk_its_samples() -> None:
    def sample(at_us: int, work_us: int) -> list[Activity]:
        ns = at_us * 1000
        return [
            Activity(READ, ns, ns + 30_000),
            Activity(BLOCKER, ns + 30_000, ns + 60_000),
            Activity("add", ns + 61_000, ns + (61 + work_us) * 1000),
            Activity(CLOSE, ns + 70_000, ns + 71_000),
        ]

    chunks = iter([sample(0, 2) + sample(100, 3), sample(200, 2)])
    log = SpanLog(
        READ, (BLOCKER, READ), CLOSE, lambda: None, lambda: SimpleNamespace(stop=lambda: next(chunks))
    )
    log.open(0)
    log.close(2)
    assert log.due(0) is False, "not recording between chunks"
    log.open(2)
    assert log.due(10)
    log.checked(10, 10)
    assert not log.due(19) and log.due(20)
    log.close(3)
    warnings: list[str] = []
    seen: dict[str, Any] = {}
    spans = log.spans([True, False, True], [0.004, 0.004], warnings, seen)
    assert spans == [pytest.approx(0.002), pytest.approx(0.002)] and not warnings
    assert seen == {"add": WorkTotal("kernel", 4000, 2)}


class Refused(Exception):
    """What the worker's check raises (a CandidateFault, in the worker)."""


class Capturing:
    """torch.cuda.graph as far as the replayer uses it: says in the log when a capture begins and ends."""

    def __init__(self, gpu: FakeGpu) -> None:
        self.gpu = gpu

    def __call__(self, graph: Any) -> Capturing:
        return self

    def __enter__(self) -> None:
        self.gpu.log.append("capture")

    def __exit__(self, *exc: object) -> None:
        self.gpu.log.append("end capture")


class Checked(CallHooks):
    def __init__(self, gpu: FakeGpu, refuse_at: int | None = None) -> None:
        self.gpu, self.refuse_at, self.checks = gpu, refuse_at, 0

    def called(self, sample: int | None) -> None:
        self.checks += 1
        self.gpu.log.append("check")
        if self.checks == self.refuse_at:
            raise Refused("the solution replaced torch.cuda.CUDAGraph.capture_end (while timing)")


@pytest.fixture
def graphs(gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch) -> FakeGpu:
    stream = SimpleNamespace(cuda_stream=7, wait_stream=lambda other: None)
    monkeypatch.setattr(clock, "current_stream", lambda: stream)
    monkeypatch.setattr(clock, "Stream", lambda: stream)
    monkeypatch.setattr(clock, "use_stream", lambda side: contextlib.nullcontext())
    replay = SimpleNamespace(replay=lambda: gpu.launch("work", grid=1, block=1))
    monkeypatch.setattr(clock, "CUDAGraph", lambda: replay)
    monkeypatch.setattr(clock, "graph_capture", Capturing(gpu))
    return gpu


GRAPHED = replace(PLAN, launch="graph")


def test_in_graph_mode_each_captured_call_is_checked_first_inside_its_capture(graphs: FakeGpu) -> None:
    """The captures run the candidate's forward: each is checked as it returns, before torch's end of the
    capture (code the candidate could have replaced) runs."""
    hooks = Checked(graphs)
    cuda.measure_cuda(graphs.call, 2, GRAPHED, hooks)
    captures = [i for i, what in enumerate(graphs.log) if what == "capture"]
    assert len(captures) == 2
    for at in captures:
        assert graphs.log[at : at + 4] == ["capture", "work", "check", "end capture"]
    warm_ups = 2 * GRAPH_WARMUP_CALLS
    assert graphs.log[: captures[0]].count("check") >= warm_ups, "every warm-up call of the graphs checked"


def test_a_refusal_inside_a_capture_is_raised_as_it_is_and_a_failed_capture_is_a_timing_error(
    graphs: FakeGpu,
) -> None:
    cuda.measure_cuda(graphs.call, 2, GRAPHED, Checked(graphs))
    first_capture = graphs.log.index("capture")
    refusing = Checked(graphs, refuse_at=graphs.log[:first_capture].count("check") + 1)
    graphs.log.clear()
    with pytest.raises(Refused, match="capture_end"):
        cuda.measure_cuda(graphs.call, 2, GRAPHED, refusing)
    assert graphs.log[-4:] == ["capture", "work", "check", "end capture"], "refused in the first capture"

    def fails_in_capture(index: int) -> torch.Tensor:
        if graphs.log and graphs.log[-1] == "capture":
            raise RuntimeError("operation not permitted when stream is capturing")
        return graphs.call(index)

    with pytest.raises(TimingError, match="cannot be captured as a CUDA graph"):
        cuda.measure_cuda(fails_in_capture, 2, GRAPHED, CallHooks())


def test_a_sample_that_waited_behind_the_blocker_is_counted_as_the_judge_s_discarded_time(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call that waits for the GPU (a context-wide limit set in it) waits behind the judge's blocker until
    its timeout: the sample is not kept, and its time is the judge's ("discarded"), which the parent's clock
    allows (witnesses/bracket.py), never the candidate's."""
    launch = gpu.launch

    def first_times_out(kernel: str, *args: Any, grid: Any, block: Any, stream: int = 0) -> None:
        launch(kernel, *args, grid=grid, block=block, stream=stream)
        if kernel == BLOCKER and gpu.samples == 1:
            gpu.words.host[1] = 1  # the blocker's record: it spun to its timeout

    monkeypatch.setattr(clock, "launch_kernel", first_times_out)
    measurement = cuda.measure_cuda(gpu.call, 2, PLAN, CallHooks())
    assert measurement.phases_s["discarded"] > 0.0
    assert any("waits for the GPU" in warning for warning in measurement.warnings)
