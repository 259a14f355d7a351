"""The candidate's worker: the only process that ever imports a solution, used for exactly one candidate.

It is started ahead of need with the problem loaded (`prepare` makes the CUDA context and the timing
tools), then `load` installs the judge's guard (audit.py), takes the tamper snapshot and imports the
solution. Around every call: freed GPU memory is poisoned, inputs are compared with pristine copies
afterwards, PyTorch operators and GPU kernels are recorded below the Python dispatcher (observe.py),
and the judge's names, threads and observers are checked. Outputs go to the judge through transfer.py.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from cudasmith.errors import HarnessError
from cudasmith.hardware import device_name
from cudasmith.harness.walls import sandbox
from cudasmith.harness.wire.messages import (
    Ack,
    Construct,
    Constructed,
    Finish,
    InputSpec,
    LoadSolution,
    Ping,
    Prepare,
    Prepared,
    Ran,
    Release,
    Run,
    Time,
    TimedCheck,
    TimeSpec,
    WorkerSetup,
)
from cudasmith.harness.wire.messages import Timed as TimedReply
from cudasmith.harness.wire.status import Rule, Status
from cudasmith.harness.wire.transfer import Exporter
from cudasmith.harness.workers import audit, file_guard
from cudasmith.harness.workers.binaries import CandidateBinaries
from cudasmith.harness.workers.calls import (
    CandidateFault,
    TimedCalls,
    as_outputs,
    check_unmodified,
    classify,
    pristine,
    spec_inputs,
    timing_input_sets,
)
from cudasmith.harness.workers.gpu_only import cuda_on_cpu, needs_gpu
from cudasmith.harness.workers.observe import KernelAudit, OpAudit, OwnKernels, audit_kernels, audit_ops
from cudasmith.harness.workers.poison import poison_free_gpu_memory
from cudasmith.harness.workers.recording import EVERY_THREAD, Observation, RecordingLost
from cudasmith.harness.workers.returned import ReturnMarker, unsynchronised
from cudasmith.harness.workers.tamper import Snapshot, describe, modes_left, pin_methods, shadowed

# The C runtime a solution may call (compile_c), loaded before any solution as the rest of the harness
# is, so that the tamper snapshot holds its functions: the package loads it only when asked for it.
from cudasmith.runtime import cpu as runtime_cpu  # noqa: F401
from cudasmith.runtime import nvcc_phases
from cudasmith.runtime.cache import BUILD_DIR_ENV, extension_root
from cudasmith.tasks import perturb
from cudasmith.tasks.inputs import build_model, input_tensors, make_init_inputs
from cudasmith.tasks.parameters import NO_PARAMETERS, draw_into, drawn_values, has_parameters, matching
from cudasmith.tasks.problem import load_module
from cudasmith.timing import clock
from cudasmith.timing.measure import measure

# A kernel's name in a reason is cut to this many characters (C++ template names run to thousands).
KERNEL_NAME_CHARS = 160


# Calls of the floor module before a timed run on the CPU, and the suffix of their marker's name.
FLOOR_CALLS = 16
FLOOR_SUFFIX = "-floor"


class _Floor(torch.nn.Module):
    """A module that does no work: its calls' time is the floor of a call's."""

    def forward(self, *inputs: Any) -> Any:
        return inputs[0] if inputs else None


def _short(name: str) -> str:
    return name if len(name) <= KERNEL_NAME_CHARS else name[: KERNEL_NAME_CHARS - 1] + "…"


def _stop(observation: Observation) -> tuple[Any, ...] | None:
    """What an observation recorded, or None when it was not whole (switched off or restarted)."""
    try:
        return observation.stop()
    except RecordingLost:
        return None


def set_build_environment(solution: Path, device: str) -> None:
    """Where and for what the solution's kernels are built: its own folder of the build cache (see
    extension_root), for the targets the user named or else this GPU's, as its build worker did
    (runtime.arch.torch_arch_list). A sandboxed worker may write into that folder alone from now on."""
    source = solution.read_text(errors="replace")
    folder = extension_root(source, os.environ.get("TORCH_EXTENSIONS_DIR"))
    os.environ["TORCH_EXTENSIONS_DIR"] = str(folder)
    os.environ[BUILD_DIR_ENV] = str(folder)  # NVRTC and C builds (runtime/cache.py)
    os.environ["TRITON_CACHE_DIR"] = str(folder / "_triton")
    # torch.compile's Inductor writes its code there too, not under a temporary folder of its choosing: the
    # sandbox refuses those, and which rule refused a compiled solution would hang on whether one existed.
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder / "_inductor")
    sandbox.narrow(folder)
    # torch extensions' nvcc with its host and device sides side by side (runtime/nvcc_phases.py), unless
    # the user named an nvcc: the same in the build worker and the judged worker, or ninja builds again
    os.environ.setdefault("PYTORCH_NVCC", nvcc_phases.command())
    if device.startswith("cuda"):
        from cudasmith.runtime.arch import device_arch, torch_arch_list

        os.environ["TORCH_CUDA_ARCH_LIST"] = torch_arch_list(device_arch())


def _with_file_rules(
    judge_violation: Callable[[], audit.Violation | None], origins: audit.Origins
) -> Callable[[], audit.Violation | None]:
    """The audit's first violation, else the first file access outside the worker's sandbox policy."""
    policy = os.environ.get(sandbox.POLICY_ENV)
    if not policy:
        return judge_violation
    file_violation = file_guard.install(
        sandbox.Policy.from_json(policy), lambda code: origins.of(code) == "candidate"
    )
    return lambda: judge_violation() or file_violation()


class Candidate:
    """State of one candidate's worker: the problem, the solution, one model per config, the guard."""

    def __init__(self, setup: WorkerSetup) -> None:
        self.device = setup.device
        self.problem_path = Path(setup.problem)
        self.defences = setup.defences
        self.exporter = Exporter(setup.token)
        self.problem = load_module(self.problem_path, "problem")
        self.solution_path: Path | None = None
        self.solution: Any = None
        self.snapshot: Snapshot | None = None
        self.findings: audit.Findings | None = None
        # The audit's first refused attempt, else the first file access outside the sandbox's policy.
        self.first_violation: Callable[[], audit.Violation | None] | None = None
        self.own: OwnKernels | None = None
        self.binaries: CandidateBinaries | None = None
        self.all_ops_allowed = False
        self.extra_allowed: frozenset[str] = frozenset()
        self.models: dict[int, Any] = {}
        # Per config: seconds ModelNew's constructor took, and why its parameters were not drawn (None: drawn).
        self.built_s: dict[int, float] = {}
        self.parameters: dict[int, str | None] = {}
        self.marker = f"cudasmith-call-{clock.fresh_seed():x}"
        # The tensors handed to the candidate's calls: the judge reads them afterwards, so they must stay plain.
        self.exposed: list[torch.Tensor] = []
        # On a GPU with defences: the kernel that marks, on the caller's stream, where forward returned.
        self.returned: ReturnMarker | None = None
        self.handlers: dict[type, Any] = {
            Ping: lambda request: Ack(),  # answered once the worker's imports are done
            Prepare: lambda request: self.prepare(),
            LoadSolution: self.load,
            Construct: self.construct,
            Run: self.run,
            Time: self.time,
            Release: lambda request: self.release(),
            Finish: lambda request: self.finish(),
        }
        # Before any solution: what the worker calls on itself is what its class holds now (tamper.py).
        pin_methods(self)

    # -- lifecycle -----------------------------------------------------------------------------

    def prepare(self) -> Prepared:
        """Everything that can happen before the solution is known: CUDA context, timing tools, profiler."""
        # The reference is exact fp32; a candidate that wants TF32 must say so through the tolerance.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        if self.device.startswith("cuda"):
            from cudasmith.timing.cuda import tools

            torch.cuda.init()
            torch.empty(1, device=self.device)
            tools(torch.cuda.current_device())
        perturb.prepare(self.device)
        if self.defences:  # the profiler's first start loads CUPTI: not in the candidate's time
            observation = Observation(self.device.startswith("cuda"))
            observation.start()
            observation.stop()
            if self.device.startswith("cuda"):
                self.returned = ReturnMarker()
        return Prepared(device_name(self.device))

    def load(self, request: LoadSolution) -> Ack:
        """Install the guard, take the snapshot, import the solution."""
        self.solution_path = Path(request.solution)
        set_build_environment(self.solution_path, self.device)
        allowed = request.allowed_torch_ops
        self.all_ops_allowed = allowed == "all"
        self.extra_allowed = frozenset() if self.all_ops_allowed else frozenset(allowed)
        if self.defences:
            # Where the parent found the solution (it is judged from a copy): its folder is the solution's.
            origin = Path(request.origin or self.solution_path)
            self.findings = audit.install(self.problem_path, origin, threads=EVERY_THREAD)
            self.snapshot = Snapshot()
            roots = audit.trusted_roots((self.problem_path,), origin)
            self.own = OwnKernels(audit.Origins(*roots), self.solution_path.read_text(errors="replace"))
            self.binaries = CandidateBinaries(audit.Origins(*roots))
            pin_methods(self.binaries)
            pin_methods(self.binaries.loader)
            self.first_violation = _with_file_rules(self.findings.first_violation, audit.Origins(*roots))
        try:
            self.solution = load_module(self.solution_path, "solution")
        except Exception as exc:
            if self.device.startswith("cuda") or not needs_gpu(exc):
                raise
            raise CandidateFault(Status.COMPILE_ERROR, cuda_on_cpu(exc)) from None
        if not isinstance(getattr(self.solution, "ModelNew", None), type):
            # As much a solution that cannot be loaded as one that does not parse.
            raise CandidateFault(Status.COMPILE_ERROR, "the solution defines no class ModelNew")
        self.check("while importing the solution", full=True)
        return Ack()

    def check(self, when: str, full: bool = False) -> None:
        """Refuse a candidate that reached for the judge, replaced its functions, left threads, modes or
        handlers. Threads come first: with none of the candidate's left, none of its code runs from here
        until its next call, whatever the judge calls (and the rest of the check calls nothing of its)."""
        if not self.defences or self.snapshot is None:
            return
        started = self.findings.threads_running() if self.findings is not None else 0
        if started or (threads := self.snapshot.new_threads()):
            count, which = (started, "started in its code") if started else (len(threads), threads[0])
            raise CandidateFault(
                Status.REJECTED,
                f"the solution left {count} thread(s) running ({when}): {which}",
                Rule.PROCESSES_THREADS,
            )
        self.check_attempts(when)
        if tampered := self.snapshot.tampered():
            raise CandidateFault(Status.REJECTED, f"{describe(tampered)} ({when})", Rule.TAMPERING)
        if self.binaries is not None and (below := self.binaries.refused(full)):
            raise CandidateFault(Status.REJECTED, f"{below} ({when})", Rule.PYTORCH_COMPUTE)
        if mode := modes_left():
            raise CandidateFault(Status.REJECTED, f"the solution left {mode} active ({when})", Rule.TAMPERING)
        for index, tensor in enumerate(self.exposed):
            if (name := shadowed(tensor)) is not None:
                raise CandidateFault(
                    Status.REJECTED,
                    f"the solution gave input {index} its own {name} ({when})",
                    Rule.TAMPERING,
                )
        if full and (handlers := self.snapshot.new_signal_handlers()):
            raise CandidateFault(
                Status.REJECTED, f"the solution installed a handler for {handlers[0]} ({when})", Rule.SIGNALS
            )

    def check_attempts(self, when: str) -> None:
        """Refuse a candidate whose code the audit hook refused (even if it caught the error)."""
        if self.first_violation is not None and (violation := self.first_violation()):
            rule, reason = violation
            raise CandidateFault(Status.REJECTED, f"{reason} ({when})", rule)

    def explain(self, exc: BaseException) -> CandidateFault:
        """Status, reason and rule for an exception out of candidate code: an attempt on the judge first."""
        if self.first_violation is not None and (violation := self.first_violation()):
            rule, reason = violation
            return CandidateFault(Status.REJECTED, reason, rule)
        return classify(exc, self.solution_path)

    def finish(self) -> Ack:
        self.check("at the end", full=True)
        self.exporter.release()
        return Ack()

    def release(self) -> Ack:
        self.exporter.release()
        return Ack()

    # -- calls ---------------------------------------------------------------------------------

    def _model(self, spec: InputSpec | TimeSpec) -> Any:
        """ModelNew for the spec's config, built once, with the judge's drawn parameters where asked and
        where its parameters match Model's."""
        if spec.config_index not in self.models:
            init_inputs = make_init_inputs(self.problem, spec.config, spec.init_seed)
            started = clock.perf_counter()
            model = build_model(self.solution.ModelNew, init_inputs, spec.init_seed, self.device)
            self._sync()
            self.built_s[spec.config_index] = clock.perf_counter() - started
            self.check("while constructing ModelNew")
            self.parameters[spec.config_index] = (
                self._draw(model, init_inputs, spec) if spec.parameters else None
            )
            self.models[spec.config_index] = model
        return self.models[spec.config_index]

    def _draw(self, model: Any, init_inputs: list[Any], spec: InputSpec | TimeSpec) -> str | None:
        """Give ModelNew the parameters the judge draws for Model; why not, when they do not match."""
        reference = build_model(self.problem.Model, init_inputs, spec.init_seed, "cpu")
        if not has_parameters(reference):
            return NO_PARAMETERS
        order = matching(reference, model)
        if isinstance(order, str):
            return order
        draw_into(model, drawn_values(reference, spec.init_seed), order)
        return None

    def construct(self, request: Construct) -> Constructed:
        """Build ModelNew for one config (its constructor's builds included), under the load allowance."""
        spec = request.input
        self._model(spec)
        return Constructed(
            self.built_s[spec.config_index],
            parameters_drawn=spec.parameters and self.parameters[spec.config_index] is None,
            parameters_reason=self.parameters[spec.config_index] if spec.parameters else None,
        )

    def _inputs(self, spec: InputSpec) -> list[Any]:
        return spec_inputs(self.problem, spec, self.device)

    def _sync(self) -> None:
        if self.device.startswith("cuda"):
            clock.cuda_synchronize()  # captured before the candidate could patch torch.cuda.synchronize

    def _enforce(self, ops: OpAudit, kernels: KernelAudit, where: str) -> None:
        """Refuse PyTorch compute where the task's policy refuses it."""
        if self.all_ops_allowed:
            return
        if ops.compiled_regions:
            raise CandidateFault(
                Status.REJECTED,
                f"PyTorch compute compiled by torch.compile ran {where} ({ops.compiled_regions}x)",
                Rule.PYTORCH_COMPUTE,
            )
        refused = [
            (name, count) for name, count in ops.compute.most_common() if name not in self.extra_allowed
        ]
        if refused:
            name, count = refused[0]
            raise CandidateFault(
                Status.REJECTED, f"PyTorch operator {name} called {where} ({count}x)", Rule.PYTORCH_COMPUTE
            )
        # A widened allowlist lets PyTorch launch the kernels of the operators it allows.
        if kernels.library and not self.extra_allowed:
            name, _ = kernels.library.most_common(1)[0]
            raise CandidateFault(
                Status.REJECTED,
                f"a kernel that is not the solution's own ran {where}: {_short(name)} "
                "(PyTorch's or a library's: ATen, cuBLAS, cuDNN, cuFFT, Inductor, or a CUDA graph of them)",
                Rule.PYTORCH_COMPUTE,
            )

    def run(self, request: Run) -> Ran:
        """One call on one input set; the outputs are exported for the judge."""
        spec = request.input
        inputs = self._inputs(spec)
        model = self._model(spec)
        perturbation = clock.fresh_seed() if request.fresh_perturbation else None
        if perturbation is not None:  # drawn now: nothing in any process knew it before this call
            perturb.perturb_inputs(inputs, perturbation)
        if not self.defences:
            with torch.no_grad():
                output = model(*inputs)
            self._sync()
            return Ran(self.exporter.export(as_outputs(output, self.device)), perturb=perturbation)
        copies = pristine(inputs)
        self.exposed = input_tensors(inputs)
        if self.device.startswith("cuda"):
            poison_free_gpu_memory(request.poison_bytes)
        observation = Observation(self.device.startswith("cuda"))
        # The marker's launch is bound now (the check is pinned on this worker): from forward's return to the
        # check the judge runs nothing it looks up, so a name the solution replaced and puts back is never called.
        mark = self.returned.bound(torch.cuda.current_stream()) if self.returned is not None else None
        observation.start()
        try:
            with torch.no_grad():
                output = model(*inputs)
                status = mark() if mark is not None else 0
                self.check("during forward", full=True)  # first: nothing of the candidate's runs after it
            if int(status) != 0:
                raise HarnessError(f"the return marker could not be launched ({status})")
            self._sync()
        finally:
            recorded = _stop(observation)
        if recorded is None:
            raise CandidateFault(
                Status.REJECTED,
                "the solution switched off the judge's recording during forward",
                Rule.TAMPERING,
            )
        cpu_events, gpu_work, graphs = recorded
        ops = audit_ops(cpu_events)
        assert self.own is not None
        marker = None
        if self.returned is not None:
            gpu_work, marker = self.returned.split(gpu_work)
        kernels = audit_kernels(gpu_work, self.own)
        if graphs and not gpu_work and not self.all_ops_allowed:
            raise CandidateFault(
                Status.REJECTED,
                "a CUDA graph was replayed inside forward whose kernels the judge could not see",
                Rule.PYTORCH_COMPUTE,
            )
        self._enforce(ops, kernels, "inside forward")
        if race := unsynchronised(gpu_work, marker):
            raise CandidateFault(Status.REJECTED, race, Rule.SIDE_STREAM)
        check_unmodified(inputs, copies, "by forward")
        outputs = as_outputs(output, self.device)
        return Ran(
            self.exporter.export(outputs), dict(ops.compute), kernels.own_ns, kernels.total_ns, perturbation
        )

    def time(self, request: Time) -> TimedReply:
        """Time forward over rotating input sets, each call's inputs perturbed afresh; keep the outputs of
        calls chosen at random for the judge to re-check."""
        spec = request.time
        began = clock.perf_counter()  # the request's own phases beside the measurement's (Timing.phases_s)
        model = self._model(spec)
        input_sets = timing_input_sets(self.problem, spec, self.device)
        copies = [pristine(inputs) for inputs in input_sets] if self.defences else []
        inputs_s = clock.perf_counter() - began
        self.exposed = [tensor for inputs in input_sets for tensor in input_tensors(inputs)]
        gpu = self.device.startswith("cuda")
        observed = self.defences and not gpu  # on the GPU, the sampler's own CUPTI records are audited

        def after_each(sample: int | None) -> None:
            self.check("while timing")
            # The GPU sampler records the calling thread's samples (not warm-up), and says so; the recorder
            # of every thread on the CPU is proved whole when it stops.
            if self.defences and gpu and sample is not None and not clock.profiler_enabled():
                raise CandidateFault(
                    Status.REJECTED,
                    "the solution switched off the judge's recording while timed",
                    Rule.TAMPERING,
                )

        hooks = TimedCalls(
            input_sets, self.device, spec.checks if self.defences else 0, self.defences, after_each
        )
        run = self._marked(model, input_sets) if observed else (lambda index: model(*input_sets[index]))
        observation = Observation(gpu=False) if observed else None
        if observation is not None:
            observation.start()
        try:
            with torch.no_grad():
                if observation is not None:
                    self._floor_calls(input_sets[0])
                measurement = measure(run, len(input_sets), self.device, spec.plan, hooks)
        finally:
            recorded = _stop(observation) if observation is not None else ([], [], 0)
        auditing = clock.perf_counter()
        self.check("while timing", full=True)
        if recorded is None:
            raise CandidateFault(
                Status.REJECTED, "the solution switched off the judge's recording while timed", Rule.TAMPERING
            )
        cpu_events = recorded[0]
        if self.defences and any(
            w.startswith("CUPTI saw") and "samples of" in w for w in measurement.warnings
        ):
            raise CandidateFault(
                Status.REJECTED, "the judge's records of GPU work were cut off while timed", Rule.TAMPERING
            )
        for inputs, before in zip(input_sets, copies, strict=self.defences):
            check_unmodified(inputs, before, "during timing")
        ops = audit_ops(cpu_events, self.marker, self.marker + FLOOR_SUFFIX) if observed else OpAudit()
        kernels = audit_kernels(measurement.work, self.own) if self.defences and self.own else KernelAudit()
        self._enforce(ops, kernels, "in timed calls")
        # On the CPU, unobserved (defences off) the share is not known.
        own_share = kernels.own_share() if gpu else ops.own_share()
        outputs = [o for *_, kept in hooks.kept for o in kept]
        exporting = clock.perf_counter()
        exported = self.exporter.export(outputs)
        phases = {
            "inputs": inputs_s,
            "audit": exporting - auditing,
            "export": clock.perf_counter() - exporting,
        }
        return TimedReply(
            # What ran is judged here, not sent; the request's own phases go beside the measurement's.
            replace(measurement, work={}, phases_s={**measurement.phases_s, **phases}),
            input_sets=len(input_sets),
            checks=[TimedCheck(sample, index, seed, len(kept)) for sample, index, seed, kept in hooks.kept],
            outputs=exported,
            own_share=own_share,
            library_kernels=[_short(name) for name, _ in kernels.library.most_common(5)],
            torch_ops=dict(ops.compute),
            compute_ns=ops.compute_ns,
        )

    def _floor_calls(self, inputs: list[Any]) -> None:
        """Calls of a module that returns its first input, marked as the solution's calls are: what a call
        costs with no work in it (OpAudit.own_share takes it out of the solution's own time on the CPU)."""
        floor, record, name = _Floor(), clock.RecordFunctionFast, self.marker + FLOOR_SUFFIX
        for _ in range(FLOOR_CALLS):
            with record(name):
                floor(*inputs)

    def _marked(self, model: Any, input_sets: list[list[Any]]) -> Any:
        """Each call inside a named range, so the operators of the calls are told from the judge's own."""
        marker, record = self.marker, clock.RecordFunctionFast

        def run(index: int) -> Any:
            with record(marker):
                return model(*input_sets[index])

        return run
