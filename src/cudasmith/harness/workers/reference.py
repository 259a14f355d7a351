"""The reference worker: the problem's Model, run and timed in a process no candidate code reaches.

A session keeps two: the judge, which computes reference outputs (task dtype and float64) once per
input set and keeps them on the device, and compares candidates' outputs against them there, after
copying them out of the candidate's process (transfer.py); and the baseline worker, which times eager
PyTorch, torch.compile and the task's expert by the candidates' protocol. A problem file is trusted
code, so its validator runs here too.
"""

from __future__ import annotations

import ctypes
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from cudasmith.hardware import device_name
from cudasmith.harness.wire.messages import (
    Ack,
    Compare,
    Compared,
    Comparison,
    Describe,
    Described,
    InputSpec,
    LoadProblem,
    MeasurePeaks,
    PeaksMeasured,
    Ping,
    ProblemLoaded,
    ReferenceNotes,
    Time,
    TimeSpec,
    WorkerSetup,
)
from cudasmith.harness.wire.messages import Reference as ReferenceRequest
from cudasmith.harness.wire.outputs import Timed
from cudasmith.harness.wire.results import ConfigDescription
from cudasmith.harness.wire.transfer import TransferError, import_outputs
from cudasmith.harness.workers.calls import TimedCalls, spec_inputs, timing_input_sets
from cudasmith.harness.workers.check import all_finite, compare_outputs, validate_outputs
from cudasmith.harness.workers.recording import EVERY_THREAD, Observation
from cudasmith.harness.workers.scale import ZERO_ANSWER_OWN_ERROR, computation_scale
from cudasmith.tasks import perturb
from cudasmith.tasks.inputs import (
    build_model,
    degeneracy,
    describe_config,
    input_tensors,
    make_init_inputs,
    tensor_bytes,
    to_float64,
)
from cudasmith.tasks.parameters import draw_into, drawn_values
from cudasmith.tasks.problem import load_module
from cudasmith.timing import clock
from cudasmith.timing.calling import start_call_thread
from cudasmith.timing.measure import measure

# Reference outputs kept on the device for the session, at most this share of its memory (or, on the
# CPU, this many bytes); the least recently used go first.
GPU_CACHE_SHARE = 0.25
CPU_CACHE_BYTES = 2 * 1024**3
# A re-check's inputs are one of a config's few timing input sets, perturbed: the sets are kept, up to
# this many bytes, and copied for each re-check instead of made again (randn over the whole set).
TIMING_SETS_BYTES = 512 * 1024**2
# On drawn inputs where the reference implementation's own error against float64 exceeds this, the
# function is not computable in the task dtype there (a softmax saturated, gradients vanished): skipped.
DRAWN_MAX_OWN_ERROR = 0.5
PR_SET_DUMPABLE = 4
# The torch.compile baselines (harness/baselines.py names them) and the mode each compiles with.
COMPILE_MODES = {"compile": None, "compile-max-autotune": "max-autotune-no-cudagraphs"}


@dataclass
class Reference:
    """One input set's reference outputs, what their inputs were (for a validator), and what we noticed."""

    outputs: list[torch.Tensor]
    outputs64: list[torch.Tensor] | None
    inputs: list[Any] | None
    notes: ReferenceNotes
    # Where the answer is zero up to round-off: the scale of the values the computation went through.
    scale: float | None = None

    @property
    def nbytes(self) -> int:
        tensors = [*self.outputs, *(self.outputs64 or []), *input_tensors(self.inputs or [])]
        return tensor_bytes(tensors)


def _own_error(expected: list[torch.Tensor], expected64: list[torch.Tensor]) -> float:
    """The worst normwise error of the reference in the task dtype against float64, over its outputs."""
    worst = 0.0
    for own, truth in zip(expected, expected64, strict=True):
        if own.is_floating_point():
            norm = float(torch.linalg.vector_norm(truth.double()))
            difference = float(torch.linalg.vector_norm(own.double() - truth.double()))
            worst = max(worst, difference / norm if norm > 0 else (0.0 if difference == 0 else float("inf")))
    return worst


def _copied(value: Any) -> Any:
    """Tensors copied (also inside lists and tuples), other values as they are."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_copied(v) for v in value)
    return value


def _keep_memory_private() -> None:
    """Reference outputs live in this process: other processes of the user may not read its memory
    (/proc/PID/mem, ptrace). A candidate running as root keeps CAP_SYS_PTRACE; what stops it then is that
    the outputs that decide a verdict are computed only after its call (correctness.py)."""
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


class ReferenceWorker:
    """The problem's Model: reference outputs, comparisons and baseline timings, on one device."""

    def __init__(self, setup: WorkerSetup) -> None:
        _keep_memory_private()
        self.device = setup.device
        self.defences = setup.defences
        self.problem = load_module(Path(setup.problem), "problem")
        self.tolerance = setup.tolerance
        self.models: dict[tuple[int, bool, bool], Any] = {}
        self.baselines: dict[tuple[str, int], Any] = {}
        self.cache: OrderedDict[tuple[Any, ...], Reference] = OrderedDict()
        self.cache_bytes = 0
        self.budget = CPU_CACHE_BYTES
        self.timing_sets: OrderedDict[tuple[int, int, bool], list[Any]] = OrderedDict()
        self.timing_sets_bytes = 0
        self.call_seconds: dict[int, float] = {}
        self.handlers: dict[type, Any] = {
            Ping: lambda request: Ack(),  # answered once the worker's imports are done
            LoadProblem: lambda request: self.load(),
            Describe: self.describe,
            ReferenceRequest: self.reference,
            Compare: self.compare,
            Time: self.time,
            MeasurePeaks: self.peaks,
        }

    def load(self) -> ProblemLoaded:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        launch_us = None
        if self.device.startswith("cuda"):
            from cudasmith.device.launch_cost import calibrated_launch_us

            torch.cuda.init()
            torch.empty(1, device=self.device)
            properties = torch.cuda.get_device_properties(0)
            self.budget = int(GPU_CACHE_SHARE * properties.total_memory)
            launch_us = calibrated_launch_us()
            # NVML names the GPU by this UUID, whatever order CUDA numbers the devices in.
            gpu_uuid = f"GPU-{properties.uuid}" if getattr(properties, "uuid", None) else None
        else:
            gpu_uuid = None
            if EVERY_THREAD:  # baselines are timed as candidates are: calls on a thread of their own
                start_call_thread()
        perturb.prepare(self.device)
        return ProblemLoaded(device_name(self.device), launch_us, gpu_uuid)

    def describe(self, request: Describe) -> Described:
        return Described([ConfigDescription(**describe_config(self.problem, c)) for c in request.configs])

    # -- reference outputs ---------------------------------------------------------------------

    def _model(self, spec: InputSpec | TimeSpec, float64: bool = False) -> Any:
        key = (spec.config_index, float64, spec.parameters)
        if key not in self.models:
            init_inputs = make_init_inputs(self.problem, spec.config, spec.init_seed)
            model = build_model(self.problem.Model, init_inputs, spec.init_seed, self.device)
            if spec.parameters:
                draw_into(model, drawn_values(model, spec.init_seed))
            self.models[key] = model.to(torch.float64) if float64 else model
        return self.models[key]

    def _inputs(self, spec: InputSpec) -> list[Any]:
        """The input set `spec` names; a perturbed one (a timed call's) from a copy of its kept set."""
        if spec.perturb is None:
            return spec_inputs(self.problem, spec, self.device)
        key = (spec.config_index, spec.input_seed, spec.drawn)
        kept = self.timing_sets.get(key)
        if kept is None:
            kept = spec_inputs(self.problem, replace(spec, perturb=None), self.device)
            size = tensor_bytes(input_tensors(kept))
            if size > TIMING_SETS_BYTES:
                perturb.perturb_inputs(kept, spec.perturb)
                return kept
            while self.timing_sets and self.timing_sets_bytes + size > TIMING_SETS_BYTES:
                _, evicted = self.timing_sets.popitem(last=False)
                self.timing_sets_bytes -= tensor_bytes(input_tensors(evicted))
            self.timing_sets[key] = kept
            self.timing_sets_bytes += size
        self.timing_sets.move_to_end(key)
        inputs = _copied(kept)
        perturb.perturb_inputs(inputs, spec.perturb)
        return inputs

    def _call(self, model: Any, inputs: list[Any]) -> list[torch.Tensor]:
        with torch.no_grad():
            output = model(*inputs)
        if self.device.startswith("cuda"):
            clock.cuda_synchronize()
        values = list(output) if isinstance(output, (tuple, list)) else [output]
        return [v if isinstance(v, torch.Tensor) else torch.as_tensor(v) for v in values]

    def _compute(self, spec: InputSpec, notes: bool = True) -> Reference:
        """The reference outputs (and float64 ones) for one input set; without `notes`, for a comparison
        only, what it notices of the inputs (a degenerate output) is not looked for."""
        inputs = self._inputs(spec)
        started = time.perf_counter()
        outputs = self._call(self._model(spec), inputs)
        seconds = time.perf_counter() - started
        previous = self.call_seconds.get(spec.config_index)
        self.call_seconds[spec.config_index] = seconds if previous is None else min(previous, seconds)
        float64_reason = zero_answer = drawn_skip = None
        outputs64 = None
        try:
            candidate64 = self._call(self._model(spec, float64=True), to_float64(inputs))
            if [o.shape for o in candidate64] != [o.shape for o in outputs]:
                raise ValueError("float64 outputs have other shapes")
            outputs64 = candidate64
        except Exception as exc:
            float64_reason = f"{type(exc).__name__}: {str(exc)[:200]}"
        scale = None
        if outputs64 is not None and _own_error(outputs, outputs64) > ZERO_ANSWER_OWN_ERROR:
            model64, inputs64 = self._model(spec, float64=True), to_float64(inputs)
            scale = computation_scale(lambda: model64(*inputs64), input_tensors(inputs64))
            zero_answer = f"zero up to round-off (values on the way: RMS up to {scale:.3g})"
        if spec.drawn and scale is None:
            drawn_skip = self._drawn_skip(outputs, outputs64)
        keep_inputs = inputs if getattr(self.problem, "validate", None) is not None else None
        degenerate = degeneracy(inputs, outputs) if notes else None
        found = ReferenceNotes(len(outputs), seconds, degenerate, float64_reason, zero_answer, drawn_skip)
        return Reference(outputs, outputs64, keep_inputs, found, scale)

    @staticmethod
    def _drawn_skip(outputs: list[torch.Tensor], outputs64: list[torch.Tensor] | None) -> str | None:
        """Why the harness's own inputs say nothing on this config, or None when they do."""
        truth = outputs64 if outputs64 is not None else outputs
        if not all(all_finite(t) for t in truth if t.is_floating_point()):
            return "outside the reference's domain (NaN/Inf)"
        if outputs64 is not None and (own := _own_error(outputs, outputs64)) > DRAWN_MAX_OWN_ERROR:
            return f"the task dtype cannot represent the reference there (its own error {own:.1e}, e.g. gradients that vanish)"
        return None

    def _reference(self, spec: InputSpec, keep: bool) -> Reference:
        """From the cache, or computed (and cached when `keep`, within the memory budget; one not kept
        is for a comparison only, without notes)."""
        if spec.key in self.cache:
            self.cache.move_to_end(spec.key)
            return self.cache[spec.key]
        reference = self._compute(spec, notes=keep)
        if keep and reference.nbytes <= self.budget:
            while self.cache and self.cache_bytes + reference.nbytes > self.budget:
                _, evicted = self.cache.popitem(last=False)
                self.cache_bytes -= evicted.nbytes
            self.cache[spec.key] = reference
            self.cache_bytes += reference.nbytes
        return reference

    def reference(self, request: ReferenceRequest) -> ReferenceNotes:
        """Compute (or find) one input set's reference outputs; say what was noticed about them."""
        reference = self._reference(request.input, keep=True)
        return replace(reference.notes, call_seconds=self.call_seconds.get(request.input.config_index))

    def _judge(self, reference: Reference, outputs: list[torch.Tensor], kernelbench: bool) -> Comparison:
        validate = getattr(self.problem, "validate", None)
        if validate is None:
            return compare_outputs(
                outputs, reference.outputs, reference.outputs64, self.tolerance, reference.scale, kernelbench
            )
        # Validators are written for host tensors, as problem files are written for the CPU.
        host_inputs = [t.cpu() if isinstance(t, torch.Tensor) else t for t in reference.inputs or []]
        return validate_outputs(
            [o.cpu() for o in outputs], [o.cpu() for o in reference.outputs], validate, host_inputs
        )

    def compare(self, request: Compare) -> Compared:
        """Each listed input set: the candidate's exported outputs against the reference's."""
        results = []
        for item in request.items:
            spec = item.input
            try:
                outputs = import_outputs(item.outputs, request.token, self.device)
            except TransferError as exc:
                results.append(Comparison(False, transfer=str(exc)))
                continue
            reference = self._reference(spec, keep=spec.perturb is None)
            results.append(self._judge(reference, outputs, kernelbench=not request.rechecks))
            del outputs
        return Compared(results)

    # -- baselines and peaks -------------------------------------------------------------------

    def _baseline(self, name: str, spec: TimeSpec) -> Any:
        key = (name, spec.config_index)
        if key not in self.baselines:
            problem = self.problem

            def expert(cls: type) -> Any:
                init_inputs = make_init_inputs(problem, spec.config, spec.init_seed)
                return build_model(cls, init_inputs, spec.init_seed, self.device)

            self.baselines[key] = build_baseline(name, problem, expert, self._model(spec))
        return self.baselines[key]

    def time(self, request: Time) -> Timed:
        """Time one baseline on one config by the candidates' protocol (perturbed inputs included)."""
        spec = request.time
        callable_ = self._baseline(spec.baseline, spec)
        input_sets = timing_input_sets(self.problem, spec, self.device)
        hooks = TimedCalls(input_sets, self.device, 0, self.defences)
        # On the CPU a candidate is timed under the operator recorder; its baselines are too.
        observation = Observation(gpu=False) if self.defences and not self.device.startswith("cuda") else None
        marker, record = "cudasmith-baseline", clock.RecordFunctionFast

        def run(index: int) -> Any:
            with record(marker):
                return callable_(*input_sets[index])

        if observation is not None:
            observation.start()
        try:
            with torch.no_grad():
                measurement = measure(run, len(input_sets), self.device, spec.plan, hooks)
        finally:
            if observation is not None:
                observation.stop()
        return Timed(replace(measurement, work={}))

    def peaks(self, request: MeasurePeaks) -> PeaksMeasured:
        from cudasmith.device.speed_of_light import ensure_peaks

        return PeaksMeasured(ensure_peaks(self.device, remeasure=request.remeasure))


def build_baseline(name: str, problem: ModuleType, expert: Callable[[type], Any], eager: Any) -> Any:
    """The callable the baseline worker times for a baseline; `expert(cls)` builds a class like Model."""
    if name == "eager":
        return eager
    if name in COMPILE_MODES:
        torch._dynamo.reset()  # each config compiles alone, with static shapes
        return torch.compile(eager, mode=COMPILE_MODES[name], dynamic=False)
    if name == "expert":
        implementation = getattr(problem, "EXPERT", None)
        if isinstance(implementation, type):
            return expert(implementation)
        if callable(implementation):
            return implementation
        raise ValueError("the problem's EXPERT is neither a class built like Model nor a callable")
    raise ValueError(f"unknown baseline {name!r}")
