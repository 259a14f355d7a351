"""The worker: a fresh process that loads a problem (and, for a candidate, its solution) and runs them.

Started under a supervisor as `python -m cudasmith.harness.worker IN_FD OUT_FD`, it answers one
request at a time on the parent's pipes. Two roles: `reference` runs the problem's Model (task dtype
and float64) and times it; `candidate` runs the solution's ModelNew and times it. Only this process
ever imports candidate code. It sends back plain tensors, timings and what it observed, never verdicts.

Around every candidate call: freed GPU memory is poisoned, inputs are compared with pristine copies
afterwards, PyTorch operators are recorded, and the harness's functions and threads are checked
against a snapshot taken before the candidate was imported.
"""

from __future__ import annotations

import ctypes
import signal
import sys
import traceback
from multiprocessing.connection import Connection
from os import _exit
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from cudasmith.errors import CompileError
from cudasmith.hardware import device_name
from cudasmith.harness import protocol
from cudasmith.harness.poison import poison_free_gpu_memory
from cudasmith.harness.tamper import Snapshot, describe
from cudasmith.harness.torch_ops import OpRecorder
from cudasmith.harness.tracebacks import solution_traceback
from cudasmith.tasks.inputs import (
    build_model,
    degeneracy,
    describe_config,
    drawn_inputs,
    input_tensors,
    make_init_inputs,
    make_inputs,
    perturb_inputs,
    tensor_bytes,
    to_float64,
)
from cudasmith.tasks.problem import load_module
from cudasmith.timing import clock
from cudasmith.timing.protocol import CallHooks, TimingPlan, measure

# Timing rotates among this many distinct input sets, fewer when their memory would pass the cap.
TIMING_INPUT_SETS = 4
TIMING_INPUT_BYTES_CAP = 2 * 1024**3
PR_SET_PDEATHSIG = 1
# The end of a compiler's log that a verdict keeps (the first errors are at its start, so most fit).
COMPILE_LOG_CHARS = 20000
# Bound before candidate code runs (see tamper.py): the worker sends with these, whatever is patched.
_send, _receive = protocol.send, protocol.receive


class CandidateFault(Exception):
    """The candidate did something the contract forbids; carries the verdict status and a reason."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status


def _where(exc: BaseException, solution: Path | None) -> str:
    """' (solution.py:42 in forward)' for the innermost frame in the solution file, if any."""
    if solution is None:
        return ""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == solution]
    if not frames:
        return ""
    return f" ({solution.name}:{frames[-1].lineno} in {frames[-1].name})"


def classify(exc: BaseException, solution: Path | None) -> tuple[str, str]:
    """Verdict status and one-line reason for an exception raised by candidate code."""
    message = str(exc).strip().splitlines()[0][:400] if str(exc).strip() else ""
    if isinstance(exc, CandidateFault):
        return exc.status, str(exc)
    if isinstance(exc, SystemExit):
        return "rejected", f"the solution called sys.exit({exc.code!r}){_where(exc, solution)}"
    if isinstance(exc, SyntaxError):
        return "compile_error", f"the solution does not parse: {exc.msg} (line {exc.lineno})"
    if isinstance(exc, CompileError):
        return "compile_error", message
    name = type(exc).__name__
    if "CompilationError" in name or "Error building extension" in str(exc):
        return "compile_error", f"{name}: {message}{_where(exc, solution)}"
    return "runtime_error", f"{name}: {message}{_where(exc, solution)}"


def _as_outputs(value: Any, device: str) -> list[torch.Tensor]:
    """The call's outputs as a list of plain tensors on `device`, or a CandidateFault saying why not."""
    values = list(value) if isinstance(value, (tuple, list)) else [value]
    if not values:
        raise CandidateFault("incorrect", "forward returned an empty sequence")
    for index, item in enumerate(values):
        label = f"output {index}" if len(values) > 1 else "the output"
        if type(item) is not torch.Tensor:
            raise CandidateFault(
                "incorrect", f"{label} is a {type(item).__qualname__}, not a plain torch.Tensor"
            )
        if item.device.type != torch.device(device).type:
            raise CandidateFault("incorrect", f"{label} is on {item.device}, expected {device}")
        if item.layout is not torch.strided:
            raise CandidateFault("incorrect", f"{label} has layout {item.layout}, expected a dense tensor")
    return values


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor's bytes, so that comparisons see NaN payloads and -0.0."""
    return tensor.detach().contiguous().reshape(-1).view(torch.uint8)


def _pristine(inputs: list[Any]) -> list[torch.Tensor]:
    return [t.detach().clone() for t in input_tensors(inputs)]


def _check_unmodified(inputs: list[Any], pristine: list[torch.Tensor], when: str) -> None:
    for index, (now, before) in enumerate(zip(input_tensors(inputs), pristine, strict=True)):
        if not torch.equal(_bits(now), _bits(before)):
            raise CandidateFault("rejected", f"input {index} was modified {when}")


class TimedCalls(CallHooks):
    """Around each warm-up and timed call: fresh inputs (perturb_inputs, undone afterwards), and the
    outputs of a few timed calls chosen at random (reservoir sampling) kept for re-checking.

    Both are drawn from the OS's entropy at the moment they are needed (clock.fresh_seed): the
    perturbation just before the call, the choice to keep its output just after it returns. Nothing
    in the process, however much of it a candidate reads, says how a later call's inputs will be
    perturbed or whether its output will be checked.
    """

    def __init__(
        self, input_sets: list[list[Any]], device: str, request: dict[str, Any], perturb: bool
    ) -> None:
        self.input_sets = input_sets
        self.device = device
        self.perturb = perturb
        self.wanted = request.get("checks", 0)
        self.kept: list[tuple[int, int, int, list[torch.Tensor]]] = []  # (sample, set, perturbation, outputs)
        self.seen = 0
        self.current = 0

    def before(self, sample: int | None, index: int) -> None:
        if self.perturb:
            self.current = clock.fresh_seed()
            perturb_inputs(self.input_sets[index], self.current)

    def after(self, sample: int | None, index: int, output: Any, kept: bool) -> None:
        if self.perturb:
            perturb_inputs(self.input_sets[index], self.current)  # restores the inputs
        if sample is None or not kept or not self.wanted:
            return
        self.seen += 1
        slot = len(self.kept) if len(self.kept) < self.wanted else clock.fresh_below(self.seen)
        if slot < self.wanted:
            outputs = [o.detach().clone() for o in _as_outputs(output, self.device)]
            entry = (sample, index, self.current, outputs)
            if slot == len(self.kept):
                self.kept.append(entry)
            else:
                self.kept[slot] = entry


class Worker:
    """State of one worker process: the loaded modules, one model per config, the tamper snapshot."""

    def __init__(self, setup: dict[str, Any]) -> None:
        self.role: str = setup["role"]
        self.device: str = setup["device"]
        self.problem_path = Path(setup["problem"])
        self.solution_path = Path(setup["solution"]) if setup.get("solution") else None
        allowed = setup.get("allowed_torch_ops", [])
        self.all_ops_allowed = allowed == "all"
        self.extra_allowed_ops = frozenset() if self.all_ops_allowed else frozenset(allowed)
        self.problem: ModuleType | None = None
        self.solution: ModuleType | None = None
        self.snapshot: Snapshot | None = None
        self.models: dict[tuple[int, bool], Any] = {}
        # Off only to measure what the defences cost (benchmarks/defence_overhead.py).
        self.defences: bool = setup.get("defences", True)
        self.baselines: dict[tuple[str, int], Any] = {}

    def _sync(self) -> None:
        if self.device.startswith("cuda"):
            clock.cuda_synchronize()  # captured before the candidate could patch torch.cuda.synchronize

    def guard(self, when: str) -> None:
        """Refuse a candidate that replaced the harness's functions or left threads running."""
        if self.snapshot is None:
            return
        if tampered := self.snapshot.tampered():
            raise CandidateFault("rejected", f"{describe(tampered)} ({when})")
        if threads := self.snapshot.new_threads():
            raise CandidateFault(
                "rejected", f"the solution left {len(threads)} thread(s) running ({when}): {threads[0]}"
            )

    def load(self, request: dict[str, Any]) -> dict[str, Any]:
        # The reference is exact fp32; a candidate that wants TF32 must say so through the tolerance.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        if self.device.startswith("cuda"):
            torch.cuda.init()
            torch.empty(1, device=self.device)  # create the context before the snapshot of threads
        self.problem = load_module(self.problem_path, "problem")
        if self.role == "candidate":
            assert self.solution_path is not None
            self.snapshot = Snapshot() if self.defences else None
            self.solution = load_module(self.solution_path, "solution")
            if not isinstance(getattr(self.solution, "ModelNew", None), type):
                raise CandidateFault("runtime_error", "the solution defines no class ModelNew")
            self.guard("while importing the solution")
        return {"ok": True, "device_name": device_name(self.device)}

    def _model(self, request: dict[str, Any], float64: bool = False) -> Any:
        key = (request["config_index"], float64)
        if key not in self.models:
            assert self.problem is not None
            source = self.problem if self.role == "reference" else self.solution
            cls = source.Model if self.role == "reference" else source.ModelNew  # type: ignore[union-attr]
            init_inputs = make_init_inputs(self.problem, request["config"], request["init_seed"])
            model = build_model(cls, init_inputs, request["init_seed"], self.device)
            self.models[key] = model.to(torch.float64) if float64 else model
            self.guard("while constructing ModelNew")
        return self.models[key]

    def _inputs(self, request: dict[str, Any]) -> list[Any]:
        assert self.problem is not None
        inputs = make_inputs(self.problem, request["config"], request["input_seed"], self.device)
        if request.get("drawn"):
            inputs = drawn_inputs(inputs, request["input_seed"])
        if request.get("perturb") is not None:
            perturb_inputs(inputs, request["perturb"])
        return inputs

    def _call(self, model: Any, inputs: list[Any]) -> list[torch.Tensor]:
        with torch.no_grad():
            output = model(*inputs)
        self._sync()
        return _as_outputs(output, self.device)

    def run(self, request: dict[str, Any]) -> tuple[dict[str, Any], list[torch.Tensor]]:
        inputs = self._inputs(request)
        if self.role == "reference":
            return self._run_reference(request, inputs)
        model = self._model(request)
        if not self.defences:
            return {"ok": True}, self._call(model, inputs)
        pristine = _pristine(inputs)
        if self.device.startswith("cuda"):
            poison_free_gpu_memory(request.get("poison_bytes", 0))
        with OpRecorder() as recorder, torch.no_grad():
            output = model(*inputs)
        self._sync()
        self.guard("during forward")
        _check_unmodified(inputs, pristine, "by forward")
        compute_ops = recorder.compute_ops()
        refused = recorder.compute_ops(self.extra_allowed_ops)
        if refused and not self.all_ops_allowed:
            name, count = refused.most_common(1)[0]
            raise CandidateFault("rejected", f"PyTorch operator {name} called inside forward ({count}x)")
        return {"ok": True, "torch_ops": dict(compute_ops)}, _as_outputs(output, self.device)

    def _run_reference(
        self, request: dict[str, Any], inputs: list[Any]
    ) -> tuple[dict[str, Any], list[torch.Tensor]]:
        outputs = self._call(self._model(request), inputs)
        header: dict[str, Any] = {
            "ok": True,
            "n_outputs": len(outputs),
            "degenerate": degeneracy(inputs, outputs),
        }
        if request.get("float64"):
            try:
                outputs64 = self._call(self._model(request, float64=True), to_float64(inputs))
                if [o.shape for o in outputs64] != [o.shape for o in outputs]:
                    raise ValueError("float64 outputs have other shapes")
                outputs = outputs + outputs64
                header["float64"] = True
            except Exception as exc:
                header["float64"] = False
                header["float64_reason"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        if request.get("return_inputs"):  # for a validator, which judges outputs against these inputs
            outputs = outputs + input_tensors(inputs)
        return header, outputs

    def _timed(self, request: dict[str, Any]) -> Any:
        """What a time request times: the candidate's model, or the baseline a reference worker is asked for."""
        name = request.get("baseline", "eager")
        if self.role == "candidate" or name == "eager":
            return self._model(request)
        key = (name, request["config_index"])
        if key not in self.baselines:
            problem = self.problem
            assert problem is not None
            init_seed = request["init_seed"]

            def expert(cls: type) -> Any:
                init_inputs = make_init_inputs(problem, request["config"], init_seed)
                return build_model(cls, init_inputs, init_seed, self.device)

            from cudasmith.harness.baselines import build_baseline

            self.baselines[key] = build_baseline(name, problem, expert, self._model(request))
        return self.baselines[key]

    def time(self, request: dict[str, Any]) -> tuple[dict[str, Any], list[torch.Tensor]]:
        """Time forward over rotating input sets, each call's inputs perturbed afresh (see
        perturb_inputs); keep the outputs of a few calls chosen at random, for the parent to check."""
        assert self.problem is not None
        model = self._timed(request)
        seeds = request["input_seeds"]
        input_sets = [make_inputs(self.problem, request["config"], seeds[0], self.device)]
        affordable = max(1, TIMING_INPUT_BYTES_CAP // max(1, tensor_bytes(input_sets[0])))
        for seed in seeds[1 : min(len(seeds), TIMING_INPUT_SETS, affordable)]:
            input_sets.append(make_inputs(self.problem, request["config"], seed, self.device))
        pristine = [_pristine(inputs) for inputs in input_sets] if self.defences else []
        hooks = TimedCalls(input_sets, self.device, request, self.defences)
        with torch.no_grad():
            measurement = measure(
                lambda index: model(*input_sets[index]),
                len(input_sets),
                self.device,
                TimingPlan(**request.get("plan", {})),
                hooks,
            )
        if self.role == "candidate" and self.defences:
            self.guard("while timing")
            for inputs, copies in zip(input_sets, pristine, strict=True):
                _check_unmodified(inputs, copies, "during timing")
        checks = [
            {"call": sample, "set": index, "perturb": seed, "n_outputs": len(outputs)}
            for sample, index, seed, outputs in hooks.kept
        ]
        header = {
            "ok": True,
            "measurement": measurement.summary(),
            "input_sets": len(input_sets),
            "checks": checks,
        }
        return header, [o for *_, outputs in hooks.kept for o in outputs]

    def peaks(self, request: dict[str, Any]) -> dict[str, Any]:
        from cudasmith.device import ensure_peaks

        return {"ok": True, "peaks": ensure_peaks(self.device).to_dict()}

    def describe(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.problem is not None
        return {
            "ok": True,
            "configs": [describe_config(self.problem, config) for config in request["configs"]],
        }

    def finish(self) -> dict[str, Any]:
        self.guard("at the end")
        return {"ok": True}

    def handle(self, request: dict[str, Any]) -> tuple[dict[str, Any], list[torch.Tensor]]:
        op = request.get("op")
        if op == "load":
            return self.load(request), []
        if op == "describe":
            return self.describe(request), []
        if op == "run":
            return self.run(request)
        if op == "time":
            return self.time(request)
        if op == "finish":
            return self.finish(), []
        if op == "peaks":
            return self.peaks(request), []
        raise ValueError(f"unknown request {op!r}")


def serve(requests: Connection, replies: Connection) -> None:
    """Answer requests until told to exit or the parent goes away; count what is sent."""
    setup, _ = _receive(requests)
    worker = Worker(setup)
    sent = 0
    while True:
        try:
            request, _ = _receive(requests)
        except EOFError:
            return
        if request.get("op") == "exit":
            return
        try:
            header, tensors = worker.handle(request)
        except BaseException as exc:  # candidate code may raise anything, SystemExit included
            status, reason = classify(exc, worker.solution_path)
            if worker.role == "reference":
                status = "harness_error"
            tail = solution_traceback(exc, worker.solution_path)[-4000:]
            header, tensors = {"ok": False, "status": status, "reason": reason, "traceback": tail}, []
            if isinstance(exc, CompileError) and exc.log:
                header["compile_log"] = exc.log[-COMPILE_LOG_CHARS:]
        sent += 1
        _send(replies, {"id": request.get("id"), "sent": sent, **header}, tensors)


def main() -> None:
    # If the supervisor dies (killed by candidate code, say), this process dies with it.
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    requests = Connection(int(sys.argv[1]), writable=False)
    replies = Connection(int(sys.argv[2]), readable=False)
    serve(requests, replies)
    replies.close()
    # Skip interpreter teardown: candidate objects' destructors have no business running after the answer.
    sys.stdout.flush()
    sys.stderr.flush()
    _exit(0)


if __name__ == "__main__":
    main()
