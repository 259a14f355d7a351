"""What a config is and what it gave, as typed data that crosses the wire: its size and work as the judge's
worker describes it (ConfigDescription), and the sub-results of a verdict: a time as measured (Timing),
each baseline beside it (BaselineEntry), a mismatch's report (Mismatch). Their JSON forms are parts of the
verdict's JSON (docs/DESIGN.md); `from_dict` reads them back from a verdict's JSON (a run store's, a user's
file), tolerantly: a missing field takes its default."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from cudasmith.harness.wire.fields import JsonObject, known_fields
from cudasmith.jsontypes import JsonDict
from cudasmith.timing.protocol import RAW_KEYS, Measurement, TimingPlan

# A time's raw lists (of a measurement's samples): in a verdict's JSON only when asked for. What ran in
# the samples (`work`) is judged in the worker and never kept.
RAW_LISTS = tuple(key for key in RAW_KEYS if key != "work")


def _numbers(values: JsonObject) -> JsonObject:
    """Values of verdict JSON, with the infinities and NaNs it spells as strings ('inf') made floats."""
    spelled = ("inf", "-inf", "nan")
    return {
        name: float(value) if isinstance(value, str) and value.lower() in spelled else value
        for name, value in values.items()
    }


def _fields_of(cls: type, data: JsonObject, nested: dict[str, type]) -> JsonObject:
    """The values of verdict JSON for the fields of `cls` (infinities and NaNs made floats), each nested
    record under a name of `nested` made its type."""
    values = _numbers(known_fields(cls, data))
    for name, record in nested.items():
        if isinstance(values.get(name), dict):
            values[name] = record(**values[name])
    return values


@dataclass(frozen=True)
class ConfigDescription:
    """One config's size and work, from the reference on meta tensors (tasks.inputs.describe_config,
    whose keys these are); `unknown` says why the reference could not run there."""

    input_bytes: int | None = None
    parameter_bytes: int | None = None
    output_bytes: int | None = None
    flops: int | None = None
    bytes_moved: int | None = None
    unknown: str | None = None


@dataclass
class Timing:
    """One measurement as a verdict keeps it: the statistics (computed by the judge from the samples),
    how sampling went and stopped, the samples, and whether its window was exclusive (lease.py)."""

    median_ms: float
    ci95_ms: list[float]
    rel_stderr: float
    n: int
    method: str
    stop: str = ""
    discarded: int = 0
    warnings: list[str] = field(default_factory=list)
    plan: TimingPlan | None = None
    span_median_ms: float | None = None
    event_median_ms: float | None = None
    host_median_ms: float | None = None
    clock_median_mhz: float | None = None
    samples_ms: list[float] = field(default_factory=list)
    span_ms: list[float] = field(default_factory=list)
    event_ms: list[float] = field(default_factory=list)
    host_ms: list[float] = field(default_factory=list)
    clock_mhz: list[float] = field(default_factory=list)
    # None where no window was checked (a verdict from before windows were).
    exclusive: bool | None = None
    # Where the timing of the config went, in seconds: the measurement's "warmup", "sampling" and "records"
    # (reading CUPTI's records); the worker's request around it, "inputs" (making the input sets),
    # "audit" (its checks after sampling) and "export" (the kept outputs); and the judge's side, "request"
    # (from sending the request to its answer), "watch" and "probe" (the window's check for other
    # processes) and "recheck" (comparing the kept outputs with the reference).
    phases_s: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, measurement: Measurement, exclusive: bool | None = None) -> Timing:
        """What a measurement says (its summary, less what ran in it)."""
        values = known_fields(cls, measurement.summary())
        values.pop("plan", None)
        return cls(**values, plan=measurement.plan, exclusive=exclusive)

    def to_dict(self, samples: bool = False) -> JsonDict:
        """The JSON form; the raw lists only when asked for."""
        data = asdict(self)
        if not samples:
            for name in RAW_LISTS:
                data.pop(name)
        return data

    @classmethod
    def from_dict(cls, data: JsonObject) -> Timing:
        values = _fields_of(cls, data, {"plan": TimingPlan})
        return cls(
            **{"median_ms": 0.0, "ci95_ms": [0.0, 0.0], "rel_stderr": 0.0, "n": 0, "method": "", **values}
        )


@dataclass
class PreviousTime:
    """A baseline's time from an earlier session: shown beside this session's, never used."""

    time_ms: float
    measured_at: str


@dataclass
class BaselineEntry:
    """One baseline on one config in a verdict: its time and how it was measured, the candidate's speedup
    against it and the baseline's % of speed of light; or why it was not timed (`error`)."""

    time_ms: float | None = None
    ci95_ms: list[float] | None = None
    method: str = ""
    measured: str = ""
    measured_at: str = ""
    times_measured: int = 0
    exclusive: bool = True
    previous_session: PreviousTime | None = None
    drift: str | None = None
    speedup: float | None = None
    sol_pct: float | None = None
    error: str | None = None

    def to_dict(self) -> JsonDict:
        """The JSON form: the error alone, or the time with what is known of it."""
        if self.error is not None:
            return {"error": self.error}
        data = asdict(self)
        for name in ("previous_session", "drift", "error"):
            if data[name] is None:
                data.pop(name)
        return data

    @classmethod
    def from_dict(cls, data: JsonObject) -> BaselineEntry:
        return cls(**_fields_of(cls, data, {"previous_session": PreviousTime}))


@dataclass
class WrongValue:
    """One output position that failed: where, and (when the values say it) what was expected and got."""

    index: list[int]
    expected: float | None = None
    got: float | None = None
    # The error allowed there (the worst position only).
    allowed: float | None = None


@dataclass
class Mismatch:
    """Where and how much an output is wrong: how many positions of how many, the first few, and for
    floating-point outputs the errors against what was allowed and the worst position; NaN/Inf counts
    where those were misplaced."""

    mismatched: int
    of: int = 0
    first: list[WrongValue] = field(default_factory=list)
    rel_err: float | None = None
    rel_err_allowed: float | None = None
    reference_own_rel_err: float | None = None
    max_abs_err: float | None = None
    worst: WrongValue | None = None
    got_nan: int | None = None
    expected_nan: int | None = None
    got_inf: int | None = None
    expected_inf: int | None = None

    def to_dict(self) -> JsonDict:
        """The JSON form: what is known (fields that do not apply are left out)."""
        data = asdict(self)
        return {name: value for name, value in data.items() if value is not None}

    @classmethod
    def from_dict(cls, data: JsonObject) -> Mismatch:
        values = _numbers(known_fields(cls, data))
        values["first"] = [WrongValue(**v) for v in values.get("first") or [] if isinstance(v, dict)]
        if isinstance(values.get("worst"), dict):
            values["worst"] = WrongValue(**{"index": [], **values["worst"]})
        return cls(**values)


@dataclass
class TimingReport:
    """How a verdict's times were taken: L2 state, launch mode and plan; whether every timing window was
    exclusive (harness/lease.py), whether and how that was verified, and how many were timed again."""

    l2_state: str
    launch: str
    plan: TimingPlan | None = None
    exclusive: bool | None = None
    exclusive_verified: bool = False
    windows: int = 0
    retimed_windows: int = 0
    exclusivity: str = ""
    # Seconds the candidate's timing holds waited before timing, summed: for steps under way and other
    # holds to end (drain_s), for the other workers to show as stopped (pause_s), for NVML's samples to
    # settle (settle_s). What throughput pays for exclusive windows.
    drain_s: float = 0.0
    pause_s: float = 0.0
    settle_s: float = 0.0
    # Where the holds' time went once the device was held, summed (seconds): the holds from granted to
    # released (held_s); the timed requests, baselines' and peaks' included, from sending each to its
    # answer (requests_s: the exclusive time the verdict needed); listing the processes to watch (watch_s)
    # and asking the activity probe around each window (probe_s); comparing timed outputs with the
    # reference (recheck_s); the candidate's last request, sent in its hold (finish_s); resuming the paused
    # workers (release_s).
    held_s: float = 0.0
    requests_s: float = 0.0
    watch_s: float = 0.0
    probe_s: float = 0.0
    recheck_s: float = 0.0
    finish_s: float = 0.0
    release_s: float = 0.0

    def to_dict(self) -> JsonDict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: JsonObject) -> TimingReport:
        values = _fields_of(cls, data, {"plan": TimingPlan})
        return cls(**{"l2_state": "", "launch": "", **values})


@dataclass
class ScreenReport:
    """How a search's screen judged a correct candidate (harness/confirm.py): its screened speedup over eager
    PyTorch (geometric mean over configs, each config's eager time over its screened median), the most its
    screen's own spread allows (`reach`: eager over the low end of each screened median's interval), the
    bar it was held to (the run's best confirmed speedup so far, at least the baseline's 1x), the margin,
    and whether it got the full protocol. A screened time is never a verdict's time: only a confirmed
    candidate has one."""

    speedup: float | None
    reach: float | None
    bar: float
    margin: float
    confirmed: bool
    # Why it was confirmed whatever its screen said (a screen window another process shared), or "".
    why: str = ""
    # The screen's timed requests, summed over its configs (seconds).
    seconds: float = 0.0

    def to_dict(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: JsonObject) -> ScreenReport:
        values = _numbers(known_fields(cls, data))
        return cls(**{"speedup": None, "reach": None, "bar": 1.0, "margin": 0.0, "confirmed": True, **values})
