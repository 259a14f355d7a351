"""The candidate's worker: the only process that ever imports a solution, used for exactly one candidate.

It is started ahead of need with the problem loaded (`prepare` makes the CUDA context, the timing tools
and, on the CPU, the thread timed calls run on; `calibrate` times the judge's own empty calls for the
parent's clock), then `load` points its builds at the build folder its parent gave it (the one its
sandbox, whole from its start, lets it write), installs the judge's guard (audit.py), takes the tamper
snapshot and imports the solution. The guard's checks are here; the calls themselves, and what is checked
around each, are forward.py's.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from cudasmith.hardware import device_name
from cudasmith.harness.walls import sandbox
from cudasmith.harness.wire.messages import (
    Ack,
    Calibrate,
    Construct,
    Finish,
    LoadSolution,
    Ping,
    Prepare,
    Prepared,
    Release,
    Run,
    Time,
    WorkerSetup,
)
from cudasmith.harness.wire.outputs import Evidence
from cudasmith.harness.wire.status import Rule, Status
from cudasmith.harness.wire.transfer import Exporter
from cudasmith.harness.workers import audit, file_guard, origins
from cudasmith.harness.workers.binaries import CandidateBinaries
from cudasmith.harness.workers.calls import CandidateFault, classify
from cudasmith.harness.workers.forward import CandidateCalls
from cudasmith.harness.workers.gpu_only import cuda_on_cpu, needs_gpu
from cudasmith.harness.workers.observe import OwnKernels
from cudasmith.harness.workers.races.returned import ReturnMarker
from cudasmith.harness.workers.recording import EVERY_THREAD, Observation
from cudasmith.harness.workers.tamper import Snapshot, describe, modes_left, pin_methods, shadowed

# The C runtime a solution may call (compile_c), loaded before any solution as the rest of the harness
# is, so that the tamper snapshot holds its functions: the package loads it only when asked for it.
from cudasmith.runtime import cpu as runtime_cpu  # noqa: F401
from cudasmith.runtime import nvcc_phases
from cudasmith.runtime.cache import BUILD_DIR_ENV, extension_root
from cudasmith.tasks import perturb
from cudasmith.tasks.problem import load_module
from cudasmith.timing.calling import start_call_thread


def set_build_environment(folder: Path, device: str) -> None:
    """Where and for what the solution's kernels are built: the build folder its parent gave this worker
    (the only one its sandbox lets it write, walls/scratch.py), for the targets the user named or else this
    GPU's, as its build worker did (runtime.arch.torch_arch_list)."""
    os.environ["TORCH_EXTENSIONS_DIR"] = str(folder)
    os.environ[BUILD_DIR_ENV] = str(folder)  # NVRTC and C builds (runtime/cache.py)
    os.environ["TRITON_CACHE_DIR"] = str(folder / "_triton")
    # torch.compile's Inductor writes its code there too, not under a temporary folder of its choosing: the
    # sandbox refuses those, and which rule refused a compiled solution would hang on whether one existed.
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder / "_inductor")
    # torch extensions' nvcc with its host and device sides side by side (runtime/nvcc_phases.py), unless
    # the user named an nvcc: the same in the build worker and the judged worker, or ninja builds again
    os.environ.setdefault("PYTORCH_NVCC", nvcc_phases.command())
    if device.startswith("cuda"):
        from cudasmith.runtime.arch import device_arch, torch_arch_list

        os.environ["TORCH_CUDA_ARCH_LIST"] = torch_arch_list(device_arch())


def _with_file_rules(
    judge_violation: Callable[[], audit.Violation | None], whose: origins.Origins, build: Path
) -> Callable[[], audit.Violation | None]:
    """The audit's first violation, else the first file access outside the worker's sandbox policy (its
    slot for builds now has its solution's build folder's name, `build`: Landlock's rules followed it)."""
    text = os.environ.get(sandbox.POLICY_ENV)
    if not text:
        return judge_violation
    given = sandbox.Policy.from_json(text)
    policy = sandbox.Policy(given.scratch, given.read, (*given.write, str(build)), given.hide)
    file_violation = file_guard.install(policy, lambda code: whose.of(code) == "candidate")
    return lambda: judge_violation() or file_violation()


class Candidate:
    """State of one candidate's worker: the problem, the solution, the guard; its calls are `self.calls`."""

    def __init__(self, setup: WorkerSetup) -> None:
        self.device = setup.device
        self.problem_path = Path(setup.problem)
        self.defences = setup.defences
        self.exporter = Exporter(setup.token)
        self.problem = load_module(self.problem_path, "problem")
        self.solution_path: Path | None = None
        self.snapshot: Snapshot | None = None
        self.findings: audit.Findings | None = None
        # The audit's first refused attempt, else the first file access outside the sandbox's policy.
        self.first_violation: Callable[[], audit.Violation | None] | None = None
        self.binaries: CandidateBinaries | None = None
        self.whose: origins.Origins | None = None  # whose code is whose, once the solution is known
        # What the replies' evidence counts: the checks run, and the threads the last one saw.
        self.checks_run = 0
        self.threads_seen = 0
        self.calls = CandidateCalls(self, self.problem, self.device, self.exporter)
        self.handlers: dict[type, Any] = {
            Ping: lambda request: Ack(),  # answered once the worker's imports are done
            Prepare: lambda request: self.prepare(),
            Calibrate: self.calls.calibrate,
            LoadSolution: self.load,
            Construct: self.calls.construct,
            Run: self.calls.run,
            Time: self.calls.time,
            Release: lambda request: self.release(),
            Finish: lambda request: self.finish(),
        }
        # Before any solution: what the worker calls on itself is what its class holds now (tamper.py).
        pin_methods(self)
        pin_methods(self.calls)

    # -- lifecycle -----------------------------------------------------------------------------

    def prepare(self) -> Prepared:
        """Everything that can happen before the solution is known: CUDA context, timing tools, profiler,
        and on the CPU the thread that makes the timed calls (a judge's thread in every later check)."""
        # The reference is exact fp32; a candidate that wants TF32 must say so through the tolerance.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        gpu = self.device.startswith("cuda")
        if gpu:
            from cudasmith.timing.cuda import tools

            torch.cuda.init()
            torch.empty(1, device=self.device)
            tools(torch.cuda.current_device())
        perturb.prepare(self.device)
        if self.defences:  # the profiler's first start loads CUPTI: not in the candidate's time
            observation = Observation(gpu)
            observation.start()
            observation.stop()
            if gpu:
                self.calls.returned = ReturnMarker()
                self.calls.probe_races()
        # Where operators are recorded on the caller's thread only, calls stay on the main thread.
        thread = start_call_thread().native_id if not gpu and EVERY_THREAD else None
        return Prepared(device_name(self.device), thread)

    def load(self, request: LoadSolution) -> Ack:
        """Narrow the sandbox, install the guard, take the snapshot, import the solution."""
        self.solution_path = Path(request.solution)
        source = self.solution_path.read_text(errors="replace")
        build = request.build or str(extension_root(source, os.environ.get("TORCH_EXTENSIONS_DIR")))
        set_build_environment(Path(build), self.device)
        allowed = request.allowed_torch_ops
        calls = self.calls
        calls.all_ops_allowed = allowed == "all"
        calls.extra_allowed = frozenset() if calls.all_ops_allowed else frozenset(allowed)
        if self.defences:
            # Where the parent found the solution (it is judged from a copy): its folder is the solution's.
            origin = Path(request.origin or self.solution_path)
            self.findings = audit.install(self.problem_path, origin, threads=EVERY_THREAD)
            self.snapshot = Snapshot()
            roots = origins.trusted_roots((self.problem_path,), origin)
            calls.own = OwnKernels(origins.Origins(*roots), source)
            self.binaries = CandidateBinaries(origins.Origins(*roots))
            pin_methods(self.binaries)
            pin_methods(self.binaries.loader)
            self.whose = whose = origins.Origins(*roots)
            self.first_violation = _with_file_rules(self.findings.first_violation, whose, Path(build))
        try:
            calls.solution = load_module(self.solution_path, "solution")
        except Exception as exc:
            if self.device.startswith("cuda") or not needs_gpu(exc):
                raise
            raise CandidateFault(Status.COMPILE_ERROR, cuda_on_cpu(exc)) from None
        if not isinstance(getattr(calls.solution, "ModelNew", None), type):
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
        self.checks_run += 1
        started = self.findings.threads_running() if self.findings is not None else 0
        new = self.snapshot.new_threads()
        self.threads_seen = len(self.snapshot.threads) + len(new)
        # torch.compile's own workers, where its compute is allowed (--rules kernelbench): idle ones only.
        compiler = self._compiler_threads(new, when)
        threads = [ident for ident in new if ident not in compiler]
        if started or threads:
            count, which = (
                (started, f"started in its code, by {self.findings.first_starter()}")
                if started and self.findings is not None
                else (len(threads), f"ident {threads[0]}")
            )
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
        for index, tensor in enumerate(self.calls.exposed):
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

    def _compiler_threads(self, new: list[int], when: str) -> frozenset[int]:
        """The new threads that torch.compile's own code started (audit.py tells them by their starter's
        frame), where PyTorch's compute is allowed; none may be running the solution's code."""
        if self.findings is None or self.whose is None or not self.calls.all_ops_allowed:
            return frozenset()
        compiler = self.findings.compiler_threads() & frozenset(new)
        assert self.snapshot is not None
        for ident in sorted(compiler):
            if any(self.whose.of(code) == "candidate" for code in self.snapshot.running_code(ident)):
                raise CandidateFault(
                    Status.REJECTED,
                    f"the solution's code runs on a thread of torch.compile's ({when}): ident {ident}",
                    Rule.PROCESSES_THREADS,
                )
        return compiler

    def evidence(self, recorded: bool, since: int, marked_calls: int = 0) -> Evidence:
        """What a reply owes the parent: the recording whole, the checks run since `since`, the threads the
        last one saw, the calls the recording saw inside the judge's markers."""
        return Evidence(recorded, self.checks_run - since, self.threads_seen, marked_calls)

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
