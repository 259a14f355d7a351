"""The worker: a fresh process that loads a problem (and, for a candidate, its solution) and runs them.

Started by the runner as `python -m cudasmith.harness.worker IN_FD OUT_FD`. It answers one request at
a time on the parent's pipes. Two roles: `reference` runs the problem's Model (task dtype and float64)
and times it; `candidate` runs the solution's ModelNew and times it. Only this process ever imports
candidate code; it sends back plain tensors and timings, never verdicts.
"""

from __future__ import annotations

import os
import sys
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from cudasmith.errors import CompileError
from cudasmith.hardware import device_name
from cudasmith.harness import protocol
from cudasmith.harness.timing import TimingPlan, measure
from cudasmith.tasks.inputs import (
    build_model,
    describe_config,
    make_init_inputs,
    make_inputs,
    tensor_bytes,
    to_float64,
)
from cudasmith.tasks.problem import load_module

# Timing rotates among this many distinct input sets, fewer when their memory would pass the cap.
TIMING_INPUT_SETS = 4
TIMING_INPUT_BYTES_CAP = 2 * 1024**3


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
    frame = frames[-1]
    return f" ({solution.name}:{frame.lineno} in {frame.name})"


def classify(exc: BaseException, solution: Path | None) -> tuple[str, str]:
    """Verdict status and one-line reason for an exception raised by candidate code."""
    message = str(exc).strip().splitlines()[0][:400] if str(exc).strip() else ""
    if isinstance(exc, CandidateFault):
        return exc.status, str(exc)
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


class Worker:
    """State of one worker process: the loaded modules and one model per config."""

    def __init__(self, setup: dict[str, Any]) -> None:
        self.role: str = setup["role"]
        self.device: str = setup["device"]
        self.problem_path = Path(setup["problem"])
        self.solution_path = Path(setup["solution"]) if setup.get("solution") else None
        self.problem: ModuleType | None = None
        self.solution: ModuleType | None = None
        self.models: dict[tuple[int, bool], Any] = {}
        self.baselines: dict[tuple[str, int], Any] = {}

    def _sync(self) -> None:
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()

    def load(self, request: dict[str, Any]) -> dict[str, Any]:
        # The reference is exact fp32; a candidate that wants TF32 must say so through the tolerance.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        if self.device.startswith("cuda"):
            torch.cuda.init()
        self.problem = load_module(self.problem_path, "problem")
        if self.role == "candidate":
            assert self.solution_path is not None
            self.solution = load_module(self.solution_path, "solution")
            if not isinstance(getattr(self.solution, "ModelNew", None), type):
                raise CandidateFault("runtime_error", "the solution defines no class ModelNew")
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
        return self.models[key]

    def _call(self, model: Any, inputs: list[Any]) -> list[torch.Tensor]:
        with torch.no_grad():
            output = model(*inputs)
        self._sync()
        return _as_outputs(output, self.device)

    def run(self, request: dict[str, Any]) -> tuple[dict[str, Any], list[torch.Tensor]]:
        assert self.problem is not None
        inputs = make_inputs(self.problem, request["config"], request["input_seed"], self.device)
        outputs = self._call(self._model(request), inputs)
        header: dict[str, Any] = {"ok": True, "n_outputs": len(outputs)}
        if self.role == "reference" and request.get("float64"):
            try:
                outputs64 = self._call(self._model(request, float64=True), to_float64(inputs))
                if [o.shape for o in outputs64] != [o.shape for o in outputs]:
                    raise ValueError("float64 outputs have other shapes")
                outputs = outputs + outputs64
                header["float64"] = True
            except Exception as exc:
                header["float64"] = False
                header["float64_reason"] = f"{type(exc).__name__}: {str(exc)[:200]}"
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

    def time(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.problem is not None
        model = self._timed(request)
        seeds = request["input_seeds"]
        input_sets = [make_inputs(self.problem, request["config"], seeds[0], self.device)]
        affordable = max(1, TIMING_INPUT_BYTES_CAP // max(1, tensor_bytes(input_sets[0])))
        for seed in seeds[1 : min(len(seeds), TIMING_INPUT_SETS, affordable)]:
            input_sets.append(make_inputs(self.problem, request["config"], seed, self.device))
        plan = TimingPlan(**request.get("plan", {}))

        def run(index: int) -> Any:
            return model(*input_sets[index])

        with torch.no_grad():
            measurement = measure(run, len(input_sets), self.device, plan)
        return {"ok": True, "measurement": measurement.summary(), "input_sets": len(input_sets)}

    def peaks(self, request: dict[str, Any]) -> dict[str, Any]:
        from cudasmith.device import ensure_peaks

        return {"ok": True, "peaks": ensure_peaks(self.device).to_dict()}

    def describe(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.problem is not None
        return {
            "ok": True,
            "configs": [describe_config(self.problem, config) for config in request["configs"]],
        }

    def handle(self, request: dict[str, Any]) -> tuple[dict[str, Any], list[torch.Tensor]]:
        op = request.get("op")
        if op == "load":
            return self.load(request), []
        if op == "describe":
            return self.describe(request), []
        if op == "run":
            return self.run(request)
        if op == "time":
            return self.time(request), []
        if op == "peaks":
            return self.peaks(request), []
        raise ValueError(f"unknown request {op!r}")


def serve(requests: Connection, replies: Connection) -> None:
    """Answer requests until told to exit or the parent goes away."""
    setup, _ = protocol.receive(requests)
    worker = Worker(setup)
    while True:
        try:
            request, _ = protocol.receive(requests)
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
            tail = "".join(traceback.format_exception(exc))[-4000:]
            header, tensors = {"ok": False, "status": status, "reason": reason, "traceback": tail}, []
        protocol.send(replies, {"id": request.get("id"), **header}, tensors)


def main() -> None:
    requests = Connection(int(sys.argv[1]), writable=False)
    replies = Connection(int(sys.argv[2]), readable=False)
    serve(requests, replies)
    replies.close()
    # Skip interpreter teardown: candidate objects' destructors have no business running after the answer.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
