"""Calling code under test inside a worker: outputs checked for form, inputs checked for mutation, timed
calls fed fresh inputs, and their outputs kept for the parent to draw re-checks from."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from cudasmith.errors import CompileError, ForbiddenBuild
from cudasmith.harness.wire.messages import InputSpec, TimeSpec
from cudasmith.harness.wire.status import Rule, Status
from cudasmith.harness.workers.tamper import shadowed
from cudasmith.tasks.inputs import drawn_inputs, input_tensors, make_inputs, tensor_bytes
from cudasmith.tasks.perturb import perturb_inputs
from cudasmith.timing import clock
from cudasmith.timing.protocol import CallHooks

# Timing rotates among this many distinct input sets, fewer when their memory would pass the cap.
TIMING_INPUT_SETS = 4
TIMING_INPUT_BYTES_CAP = 2 * 1024**3
# Bound before candidate code runs: copies of kept outputs are made with these.
_clone = torch.Tensor.clone
_detach = torch.Tensor.detach
_copy = torch.Tensor.copy_
_empty = torch.empty


class CandidateFault(Exception):
    """The candidate did something the contract forbids; carries the verdict status, a reason, and the rule
    broken (by default the status's own: a wrong answer's, say)."""

    def __init__(self, status: Status, reason: str, rule: Rule | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.rule = rule or Rule.of_status(status)


def spec_inputs(problem: ModuleType, spec: InputSpec, device: str) -> list[Any]:
    """The input set `spec` names, made on `device`: the problem's (or the harness's drawn ones), then
    perturbed where a timed call asks; the reference and the candidate make the same tensors."""
    inputs = make_inputs(problem, spec.config, spec.input_seed, device)
    if spec.drawn:
        inputs = drawn_inputs(inputs, spec.input_seed)
    if spec.perturb is not None:
        perturb_inputs(inputs, spec.perturb)
    return inputs


def _where(exc: BaseException, solution: Path | None) -> str:
    """' (solution.py:42 in forward)' for the innermost frame in the solution file, if any."""
    if solution is None:
        return ""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == solution]
    if not frames:
        return ""
    return f" ({solution.name}:{frames[-1].lineno} in {frames[-1].name})"


def classify(exc: BaseException, solution: Path | None) -> CandidateFault:
    """Verdict status, one-line reason and rule for an exception raised by candidate code."""
    message = str(exc).strip().splitlines()[0][:400] if str(exc).strip() else ""
    if isinstance(exc, CandidateFault):
        return exc
    if isinstance(exc, SystemExit):
        reason = f"the solution called sys.exit({exc.code!r}){_where(exc, solution)}"
        return CandidateFault(Status.REJECTED, reason, Rule.EARLY_EXIT)
    if isinstance(exc, ForbiddenBuild):  # a library of PyTorch's linked in: its compute is not the solution's
        return CandidateFault(Status.REJECTED, message, Rule.PYTORCH_COMPUTE)
    if isinstance(exc, SyntaxError):
        return CandidateFault(
            Status.COMPILE_ERROR, f"the solution does not parse: {exc.msg} (line {exc.lineno})"
        )
    if isinstance(exc, CompileError):
        return CandidateFault(Status.COMPILE_ERROR, message)
    name = type(exc).__name__
    if "CompilationError" in name or "Error building extension" in str(exc):
        return CandidateFault(Status.COMPILE_ERROR, f"{name}: {message}{_where(exc, solution)}")
    return CandidateFault(Status.RUNTIME_ERROR, f"{name}: {message}{_where(exc, solution)}")


# type's own slot for a class's name: `type(x).__qualname__` would ask the class's metaclass first.
_QUALNAME = type.__dict__["__qualname__"]


def _items(value: Any) -> list[Any]:
    """A returned tuple's or list's items, read by their types' own iterators: isinstance would read a
    `__class__` of the candidate's, and a subclass's `__iter__` is the candidate's code."""
    kind = type(value)
    if issubclass(kind, tuple):
        return list(tuple.__iter__(value))
    if issubclass(kind, list):
        return list(list.__iter__(value))
    return [value]


def as_outputs(value: Any, device: str) -> list[torch.Tensor]:
    """The call's outputs as a list of plain tensors on `device`, or a CandidateFault saying why not.
    Nothing of the candidate's runs here (this is after its call): outputs are inspected by type first."""
    values = _items(value)
    if not values:
        raise CandidateFault(Status.INCORRECT, "forward returned an empty sequence")
    for index, item in enumerate(values):
        label = f"output {index}" if len(values) > 1 else "the output"
        if type(item) is not torch.Tensor:
            raise CandidateFault(
                Status.INCORRECT, f"{label} is a {_QUALNAME.__get__(type(item))}, not a plain torch.Tensor"
            )
        if (name := shadowed(item)) is not None:
            raise CandidateFault(
                Status.REJECTED,
                f"{label} carries its own {name} (which the judge would call instead of torch's)",
                Rule.TAMPERING,
            )
        if item.device.type != torch.device(device).type:
            raise CandidateFault(Status.INCORRECT, f"{label} is on {item.device}, expected {device}")
        if item.layout is not torch.strided:
            raise CandidateFault(
                Status.INCORRECT, f"{label} has layout {item.layout}, expected a dense tensor"
            )
    return values


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor's bytes, so that comparisons see NaN payloads and -0.0."""
    return tensor.detach().contiguous().reshape(-1).view(torch.uint8)


def pristine(inputs: list[Any]) -> list[torch.Tensor]:
    """Copies of the input tensors, to check afterwards that nothing changed them."""
    return [_clone(_detach(t)) for t in input_tensors(inputs)]


def check_unmodified(inputs: list[Any], copies: list[torch.Tensor], when: str) -> None:
    """A CandidateFault when an input differs from its copy in any bit."""
    for index, (now, before) in enumerate(zip(input_tensors(inputs), copies, strict=True)):
        if not torch.equal(_bits(now), _bits(before)):
            raise CandidateFault(Status.REJECTED, f"input {index} was modified {when}", Rule.INPUT_MUTATION)


def timing_input_sets(problem: ModuleType, spec: TimeSpec, device: str) -> list[list[Any]]:
    """The input sets a timing rotates through, as many as fit under TIMING_INPUT_BYTES_CAP."""
    sets = [make_inputs(problem, spec.config, spec.input_seeds[0], device)]
    affordable = max(1, TIMING_INPUT_BYTES_CAP // max(1, tensor_bytes(sets[0])))
    for seed in spec.input_seeds[1 : min(len(spec.input_seeds), TIMING_INPUT_SETS, affordable)]:
        sets.append(make_inputs(problem, spec.config, seed, device))
    return sets


@dataclass
class Kept:
    """A timed call whose outputs are kept for the parent to draw re-checks from."""

    sample: int
    set: int
    perturb: int
    outputs: list[torch.Tensor]


def _empty_copy(tensor: torch.Tensor) -> torch.Tensor:
    return _empty(tensor.shape, dtype=tensor.dtype, device=tensor.device)


class TimedCalls(CallHooks):
    """Around each warm-up and timed call: fresh inputs (perturb_inputs, undone afterwards), a check of the
    worker's integrity (`after_each`, run first once the call returns: CallHooks.called), and a copy of every
    timed call's outputs, kept while they fit in `retain_bytes` (then a uniform sample of them, reservoir
    sampling): the parent draws which of them to re-check only once this worker is stopped.

    The perturbation is drawn just before a call, from the OS's entropy (clock.fresh_seed): nothing in the
    process, however much of it a candidate reads, says how a later call's inputs will be perturbed. Copies
    are made by `keep_like` (a tensor in shared memory on the CPU, Exporter.shared), by default on the
    outputs' device.
    """

    def __init__(
        self,
        input_sets: list[list[Any]],
        device: str,
        retain_bytes: int,
        perturb: bool,
        after_each: Callable[[int | None], None] | None = None,
        keep_like: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ) -> None:
        self.input_sets = input_sets
        self.device = device
        self.perturb = perturb
        self.retain_bytes = retain_bytes
        self.after_each = after_each
        self.keep_like = keep_like or _empty_copy
        self.kept: list[Kept] = []
        self.capacity = 0
        self.seen = 0
        self.current = 0

    def before(self, sample: int | None, index: int) -> None:
        if self.perturb:
            self.current = clock.fresh_seed()
            perturb_inputs(self.input_sets[index], self.current)

    def called(self, sample: int | None) -> None:
        if self.after_each is not None:
            self.after_each(sample)

    def after(self, sample: int | None, index: int, output: Any, kept: bool) -> None:
        if self.perturb:
            perturb_inputs(self.input_sets[index], self.current)  # restores the inputs
        if sample is None or not kept or self.retain_bytes <= 0:
            return
        outputs = as_outputs(output, self.device)
        if not self.capacity:
            size = max(1, sum(o.numel() * o.element_size() for o in outputs))
            self.capacity = max(1, self.retain_bytes // size)
        self.seen += 1
        slot = len(self.kept) if len(self.kept) < self.capacity else clock.fresh_below(self.seen)
        if slot == len(self.kept):
            copies = [self.keep_like(o) for o in outputs]
            self.kept.append(Kept(sample, index, self.current, copies))
        elif slot < self.capacity:
            entry = self.kept[slot]
            copies = entry.outputs
            entry.sample, entry.set, entry.perturb = sample, index, self.current
        else:
            return
        for copy, output_tensor in zip(copies, outputs, strict=True):
            _copy(copy, _detach(output_tensor))
