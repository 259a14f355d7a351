"""What the parent and its workers say to each other, as types: the setup, each request and its reply.

Each crosses a pipe as a JSON header (protocol.py), written and read by wire.py, which checks every field
of a reply against its type: replies come from processes that run candidate code. A request names its
`op` and the type of its reply; a worker answers through a table of handlers, one per request type
(worker.py), and a request that fails there is answered with a `Failed` instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, get_args

from cudasmith.device import DevicePeaks
from cudasmith.harness.wire.fields import MalformedMessage, from_wire, to_wire
from cudasmith.harness.wire.outputs import Calibrated, OutputRef, Ran, Timed
from cudasmith.harness.wire.results import ConfigDescription, Mismatch
from cudasmith.harness.wire.status import Rule, Status
from cudasmith.jsontypes import JsonDict
from cudasmith.tasks.problem import Config
from cudasmith.timing.protocol import TimingPlan

# -- what to run --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InputSpec:
    """One input set of one config: enough for any worker to make the same tensors on the same device."""

    config_index: int
    config: Config
    init_seed: int
    input_seed: int
    # The harness's own inputs (signed, wider range) instead of the problem's.
    drawn: bool = False
    # A timed call's perturbation (tasks.inputs.perturb_inputs), applied after the inputs are made.
    perturb: int | None = None
    # Module parameters drawn by the judge (tasks.parameters) instead of the default initialisation.
    parameters: bool = False

    @property
    def key(self) -> tuple[Any, ...]:
        """What identifies the reference outputs of this input set."""
        return (self.config_index, self.init_seed, self.input_seed, self.drawn, self.perturb, self.parameters)


@dataclass(frozen=True)
class TimeSpec:
    """Timing one config: the input sets to rotate through, the plan, and how many bytes of the timed calls'
    outputs a candidate's worker keeps for the parent to draw re-checks from (0: none, a baseline's)."""

    config_index: int
    config: Config
    init_seed: int
    input_seeds: tuple[int, ...]
    plan: TimingPlan
    retain_bytes: int = 0
    # For a reference worker: which baseline to time ("eager", "compile", …).
    baseline: str = "eager"
    # Module parameters drawn by the judge, as the config's correctness checks had them.
    parameters: bool = False

    def input(self, set_index: int, perturb: int | None = None) -> InputSpec:
        """The input set a timed call used, with the perturbation it saw."""
        return InputSpec(
            self.config_index,
            self.config,
            self.init_seed,
            self.input_seeds[set_index],
            perturb=perturb,
            parameters=self.parameters,
        )


@dataclass(frozen=True)
class WorkerSetup:
    """A worker's first message: its role, the problem, the device, and the token of its outputs' names."""

    role: Literal["candidate", "reference"]
    problem: str
    device: str
    defences: bool = True
    tolerance: dict[str, dict[str, float]] = field(default_factory=dict)
    token: str = ""


# -- replies ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ack:
    """Done, with nothing to say."""


@dataclass(frozen=True)
class Failed:
    """A request that failed in the worker: its status, reason and the rule broken (`harness`: the judge's
    own worker failed, not a candidate)."""

    status: str
    reason: str = ""
    traceback: str = ""
    compile_log: str = ""
    harness: bool = False
    rule: str = ""

    @property
    def verdict_status(self) -> Status:
        """The status as a verdict's (one that is not a status at all is a forged reply: rejected)."""
        return Status.parse(self.status)

    @property
    def verdict_rule(self) -> Rule | None:
        """The rule as a verdict's: the one named, or the status's own where none (or no rule) is named."""
        return Rule.parse(self.rule, self.verdict_status)


@dataclass(frozen=True)
class Prepared:
    """A candidate worker ready for its solution, on the named device; on the CPU, the thread that will
    make its timed calls (timing/calling.py), by its id in /proc: started now, before any solution."""

    device_name: str
    call_thread: int | None = None


@dataclass(frozen=True)
class Constructed:
    """ModelNew built for a config: how long its constructor took, and whether the judge's parameters
    reached it (why not, when they did not)."""

    seconds: float
    parameters_drawn: bool = False
    parameters_reason: str | None = None


@dataclass(frozen=True)
class ProblemLoaded:
    """The judge's worker ready: the device's name, its calibrated launch cost, and the GPU's UUID."""

    device_name: str
    launch_us: float | None = None
    gpu_uuid: str | None = None


@dataclass(frozen=True)
class Described:
    """Each config's size and work, in the order asked."""

    configs: list[ConfigDescription]


@dataclass(frozen=True)
class ReferenceNotes:
    """One input set's reference, computed (or found): what was noticed about it."""

    n_outputs: int
    seconds: float = 0.0
    degenerate: str | None = None
    float64_reason: str | None = None
    zero_answer: str | None = None
    drawn_skip: str | None = None
    call_seconds: float | None = None


@dataclass(frozen=True)
class Comparison:
    """A candidate's outputs against the reference (harness/workers/check.py): one input set's, or one output's;
    `report` says where and how much when they differ, `transfer` why they could not be read."""

    ok: bool
    reason: str = ""
    rel_err: float = 0.0
    max_abs_err: float = 0.0
    report: Mismatch | None = None
    transfer: str | None = None
    # KernelBench's own check of the same outputs (check.kernelbench_allclose); None where it does not apply
    # (a problem's validator decides).
    kernelbench: bool | None = None


@dataclass(frozen=True)
class Compared:
    """One result per input set compared, in the order asked."""

    results: list[Comparison]


@dataclass(frozen=True)
class PeaksMeasured:
    """The device's peaks (bandwidth, FLOP rates), measured or read from the cache."""

    peaks: DevicePeaks


# -- requests -----------------------------------------------------------------------------------------


class BaseRequest:
    """What every request is besides its fields: its op and the type of its reply, named once as class
    arguments (`class Ping(BaseRequest, op="ping", reply=Ack)`)."""

    op: ClassVar[str]
    reply: ClassVar[type]

    def __init_subclass__(cls, op: str, reply: type, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.op = op
        cls.reply = reply


@dataclass(frozen=True)
class Ping(BaseRequest, op="ping", reply=Ack):
    """Answered once the worker's imports are done."""


@dataclass(frozen=True)
class Prepare(BaseRequest, op="prepare", reply=Prepared):
    """A candidate worker's CUDA context, timing tools and profiler, before any solution is known."""


@dataclass(frozen=True)
class Calibrate(BaseRequest, op="calibrate", reply=Calibrated):
    """Time the judge's empty function (CPU) or empty kernel (GPU) by `plan`, before any solution loads."""

    plan: TimingPlan


@dataclass(frozen=True)
class LoadSolution(BaseRequest, op="load_solution", reply=Ack):
    """Install the guard, take the snapshot, import the solution."""

    solution: str
    allowed_torch_ops: Literal["all"] | list[str] = field(default_factory=list)
    # Where the parent found the solution, when the worker is given a copy (its scratch folder's): the
    # solution's own folder for the audit.
    origin: str = ""
    # The folder the worker builds the solution's kernels in, which the parent gave it (walls/scratch.py);
    # empty: the solution's folder of the build cache, worked out by the worker.
    build: str = ""


@dataclass(frozen=True)
class Construct(BaseRequest, op="construct", reply=Constructed):
    """Build ModelNew for one config, its constructor's builds included."""

    input: InputSpec


@dataclass(frozen=True)
class Run(BaseRequest, op="run", reply=Ran):
    """One call on one input set, its outputs exported for the judge."""

    input: InputSpec
    # Freed device memory to poison before the call: the size of the outputs.
    poison_bytes: int = 0
    # Perturb the inputs just before the call, from fresh entropy drawn in the worker (correctness.py).
    fresh_perturbation: bool = False


@dataclass(frozen=True)
class Time(BaseRequest, op="time", reply=Timed):
    """Time one config (a candidate, or a reference worker's baseline)."""

    time: TimeSpec


@dataclass(frozen=True)
class Release(BaseRequest, op="release", reply=Ack):
    """Let go of the last outputs exported."""


@dataclass(frozen=True)
class Finish(BaseRequest, op="finish", reply=Ack):
    """The last checks; the answer carries the count of messages sent, compared by the parent."""


@dataclass(frozen=True)
class Exit(BaseRequest, op="exit", reply=Ack):
    """Stop serving (not answered)."""


@dataclass(frozen=True)
class LoadProblem(BaseRequest, op="load_problem", reply=ProblemLoaded):
    """Load the problem in the judge's worker: the device named, its launch cost calibrated."""


@dataclass(frozen=True)
class Describe(BaseRequest, op="describe", reply=Described):
    """Each config's size and work, from the reference on meta tensors."""

    configs: list[Config]


@dataclass(frozen=True)
class Reference(BaseRequest, op="reference", reply=ReferenceNotes):
    """The reference outputs of one input set, computed once per session and kept."""

    input: InputSpec


@dataclass(frozen=True)
class CompareItem:
    """One input set and the outputs a candidate exported for it."""

    input: InputSpec
    outputs: list[OutputRef]


@dataclass(frozen=True)
class Compare(BaseRequest, op="compare", reply=Compared):
    """A candidate's exported outputs against the reference, per input set; `token`: the candidate
    worker's, which its shared-memory files must carry. `rechecks`: timed calls' outputs, of which only
    whether they match is asked (no KernelBench check beside)."""

    token: str
    items: list[CompareItem]
    rechecks: bool = False


@dataclass(frozen=True)
class MeasurePeaks(BaseRequest, op="peaks", reply=PeaksMeasured):
    """The device's peaks (`remeasure`: again, after a baseline beat them)."""

    remeasure: bool = False


Request = (
    Ping
    | Prepare
    | Calibrate
    | LoadSolution
    | Construct
    | Run
    | Time
    | Release
    | Finish
    | Exit
    | LoadProblem
    | Describe
    | Reference
    | Compare
    | MeasurePeaks
)
# Each request type by its op: how a worker reads a header.
REQUESTS: dict[str, type] = {kind.op: kind for kind in get_args(Request)}


def request_header(request: Request, request_id: int) -> JsonDict:
    """A request as the header that carries it, with its op and the id its answer must carry."""
    return {"op": request.op, **to_wire(request), "id": request_id}


def read_request(header: Any) -> Request:
    """The request a header holds (MalformedMessage for an unknown op or wrong fields)."""
    kind = REQUESTS.get(header.get("op", "")) if isinstance(header, dict) else None
    if kind is None:
        raise MalformedMessage(
            f"unknown request {header.get('op') if isinstance(header, dict) else header!r}"
        )
    return from_wire(kind, header)


def read_reply(request: type, header: Any) -> Any:
    """The reply to a request of type `request` a header holds: its reply type, or Failed."""
    if isinstance(header, dict) and header.get("ok") is False:
        return from_wire(Failed, header)
    return from_wire(request.reply, header)  # type: ignore[attr-defined]
