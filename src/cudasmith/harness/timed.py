"""Timing one candidate, config by config, side by side with the session's baselines, with the device alone.

A candidate is timed in one hold of the device's timing lease (lease.py): the steps of other candidates in
flight have finished and their workers are paused. In the hold, the device's peaks (first time only) and the
baselines that have no fresh measurement are timed first, then the candidate config by config, on input sets
perturbed afresh for every call. Every timed request is bracketed by the parent's own clocks
(witnesses/bracket.py) and is a window checked afterwards for other processes (witnesses/exclusive.py): one
found shared is timed again, and a time that stayed shared is kept but gives no speedup. After each config, in
the hold: the reply's evidence is checked, its times against the parent's clock, and the candidate's worker is
stopped while the judge's worker reads the outputs of timed calls the parent draws only then
(witnesses/rechecks.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, fields, replace

from cudasmith.errors import HarnessError
from cudasmith.harness.assemble import apply_baselines
from cudasmith.harness.baselines import BASELINES, BaselineTime
from cudasmith.harness.confirm import Screened, decide
from cudasmith.harness.correctness import label
from cudasmith.harness.lease import Hold, Window
from cudasmith.harness.options import TIMING_EXTRA_S
from cudasmith.harness.verdict import ConfigResult, Verdict
from cudasmith.harness.view import SessionView
from cudasmith.harness.walls.process import WorkerFailure, WorkerProcess
from cudasmith.harness.wire.messages import Failed, Time, TimeSpec
from cudasmith.harness.wire.outputs import Timed
from cudasmith.harness.wire.results import Timing, TimingReport
from cudasmith.harness.wire.status import Rule, Status
from cudasmith.harness.witnesses.bracket import Bracket, Calibration, Reading, faster_than_clock
from cudasmith.harness.witnesses.rechecks import frozen_recheck, kept_enough, missing_evidence, retain_bytes
from cudasmith.tasks.inputs import derive_seed
from cudasmith.tasks.problem import Config
from cudasmith.timing.protocol import screen_plan
from cudasmith.wording import plural

# Timing rotates among this many distinct input sets (the worker may use fewer to fit memory).
TIMING_SEEDS = 4


def time_spec(view: SessionView, index: int, config: Config) -> TimeSpec:
    """What timing one config asks for: its input sets, the session's plan, the outputs to keep."""
    seeds = tuple(derive_seed(view.secret, "time", index, k) for k in range(TIMING_SEEDS))
    kept = retain_bytes(view.lease.gpu) if view.options.defences and view.options.timed_checks else 0
    return TimeSpec(index, config, derive_seed(view.secret, "init", index), seeds, view.plan, kept)


def timing_limit_s(view: SessionView, index: int) -> float:
    """How long one config's timing may take: sampling, warm-up, and some calls' worth of slack."""
    plan = view.plan
    calls = plan.min_samples + plan.warmup_calls + 4
    return TIMING_EXTRA_S + plan.max_seconds + plan.warmup_ms / 1e3 + calls * view.call_limit(index)


def time_candidate(
    view: SessionView,
    candidate: WorkerProcess,
    verdict: Verdict,
    ordered: list[ConfigResult],
    last: Callable[[], None] = lambda: None,
    calibration: Calibration | None = None,
) -> None:
    """Time a correct candidate config by config (stopping at the first failure), in one hold of the
    device: the peaks (first time only) and every config's baselines that are due first, then the
    candidate's windows, each followed by the re-check of its timed outputs (they live until the
    candidate's next request). One hold, not one per config: the steps under way are drained, the other
    candidates paused and NVML's samples settled once per candidate, not once per config. `last` runs
    in the hold once every config was timed and re-checked: the candidate's last request (the session's
    finish), which would otherwise wait for the whole of the next candidate's hold, its worker paused by
    it. Speedups, the roofline and what a failure means are worked out after the hold, while other
    candidates go on. `calibration`: what the candidate's worker measured of its calls' costs before its
    solution loaded (witnesses/bracket.py)."""
    configs = {i: c for i, c, _ in view.selected}
    verdict.timing = TimingReport(view.plan.l2_state, view.plan.launch, view.plan)
    timed: list[_Timed] = []
    with view.lease.hold(owner=candidate) as hold:
        view.oracle.ensure_peaks(hold, view.progress_line)
        # The baselines first: the candidate, paused while they are timed, ran before this hold.
        specs = [_spec(view, result, configs[result.index]) for result in ordered]
        names = [_name(view, result, configs) for result in ordered]
        used = [
            view.baselines.for_config(spec, name, hold, view.progress_line)
            for spec, name in zip(specs, names, strict=True)
        ]
        # A search's screen first (confirm.py): the full protocol below only for a candidate it confirms.
        confirmed = view.options.confirm_margin is None or _screen(
            view, candidate, verdict, ordered, specs, used, hold, calibration
        )
        to_time = zip(ordered, specs, names, used, strict=True) if confirmed else iter(())
        for result, spec, name, baselines in to_time:
            answer = time_config(view, candidate, result, spec, baselines, hold, calibration)
            checking = time.monotonic()
            judged = answer is not None and _judge_reply(
                view, candidate, verdict, result, spec, answer, calibration
            )
            reply = answer[:2] if answer is not None else None
            timed.append(_Timed(result, name, baselines, reply, time.monotonic() - checking))
            if not judged:
                break
        else:
            if all(result.status == Status.CORRECT for result in ordered):  # a screen may have failed
                finishing = time.monotonic()
                last()
                verdict.timing.finish_s = time.monotonic() - finishing
    waited(verdict.timing, hold)
    verdict.timing.recheck_s += sum(entry.recheck_s for entry in timed)
    if view.oracle.peaks is not None:
        verdict.peaks = view.oracle.peaks
    elif view.oracle.peaks_error is not None:
        verdict.note(f"no roofline: {view.oracle.peaks_error}")
    checked = [entry.baselines for entry in timed] if confirmed else used
    windows: list[Window] = [b.window for baselines in checked for b in baselines.values() if b.window]
    own: list[Window] = []
    for entry in timed:
        result = entry.result
        if entry.reply is None or result.status != Status.CORRECT:
            break  # the failure is recorded on the result: timing it failed, or its re-check did
        measured, window = entry.reply
        own.append(window)
        _record(verdict, result, measured, window, entry.baselines["eager"], entry.name)
        _judge_side(result, window, entry.recheck_s)
        _compare_with_baselines(view, candidate, verdict, result, entry.baselines, configs[result.index])
        _no_speedup_from_shared(result, entry.baselines, window, entry.name, verdict)
        if result.status != Status.CORRECT:
            break
    if any(not window.exclusive for window in own):
        # All or nothing: a candidate that disturbed its own slow configs must not be judged on its fast ones.
        for result in ordered:
            _no_speedup(result)
    exclusivity(verdict.timing, windows + own, view.lease.probe.how)


@dataclass
class _Timed:
    """One config timed in the candidate's hold: its result, name, baselines, and reply with its window
    (None: timing it failed)."""

    result: ConfigResult
    name: str
    baselines: dict[str, BaselineTime]
    reply: tuple[Timed, Window] | None
    recheck_s: float = 0.0


def _screen(
    view: SessionView,
    candidate: WorkerProcess,
    verdict: Verdict,
    ordered: list[ConfigResult],
    specs: list[TimeSpec],
    used: list[dict[str, BaselineTime]],
    hold: Hold,
    calibration: Calibration | None = None,
) -> bool:
    """Screen every config (confirm.py) in windows of `hold`; whether the candidate gets the full protocol.
    A config that fails its screen is recorded as failed (as in full timing) and nothing is confirmed."""
    screens: list[Screened] = []
    seconds = 0.0
    for result, spec, baselines in zip(ordered, specs, used, strict=True):
        short = replace(spec, plan=screen_plan(spec.plan), retain_bytes=0)
        answer = time_config(view, candidate, result, short, baselines, hold, calibration, "screening")
        # A screen's times are checked against the parent's clock as the full protocol's are.
        if answer is None or not _judge_reply(view, candidate, verdict, result, short, answer, calibration):
            return False
        timed, window, _ = answer
        measured = Timing.of(timed.measurement, window.exclusive)
        result.screened_ms = measured.median_ms
        seconds += window.request_s
        eager_ms = baselines["eager"].median_ms or 0.0
        screens.append(Screened(eager_ms, measured, window.exclusive))
    assert view.options.confirm_margin is not None
    verdict.screen = decide(screens, view.bar(), view.options.confirm_margin, seconds)
    return verdict.screen.confirmed


def time_ahead(view: SessionView) -> None:
    """The session's own timing, done while no candidate is being judged (the queue waits for its builds):
    the device's peaks and every selected config's baselines, a hold each config, as the first candidate's
    timing would otherwise do them with the GPU idle until then."""
    for index, config, hidden in view.selected:
        with view.lease.hold(session=view.owner) as hold:
            view.oracle.ensure_peaks(hold, view.progress_line)
            name = label(index, config, hidden, view.problem)
            view.baselines.for_config(time_spec(view, index, config), name, hold, view.progress_line, False)


def _name(view: SessionView, result: ConfigResult, configs: dict[int, Config]) -> str:
    return label(result.index, configs[result.index], result.hidden, view.problem)


def _spec(view: SessionView, result: ConfigResult, config: Config) -> TimeSpec:
    return replace(time_spec(view, result.index, config), parameters=result.parameters_drawn)


def waited(report: TimingReport, hold: Hold) -> None:
    """Add what one hold waited for before timing, and where its time went once held, to the verdict's sums
    (seconds; exclusivity rounds them)."""
    report.drain_s += hold.drain_s
    report.pause_s += hold.pause_s
    report.settle_s += hold.settle_s
    report.held_s += hold.held_s
    report.release_s += hold.release_s
    for window in hold.windows:
        report.requests_s += window.request_s
        report.watch_s += window.watch_s
        report.probe_s += window.probe_s


def _judge_side(result: ConfigResult, window: Window, recheck_s: float) -> None:
    """The judge's side of a config's timing beside the worker's phases (Timing.phases_s): the request
    from sending to answer, the window's checks for other processes, the re-check of timed outputs."""
    if result.timing is None:
        return
    sides = {
        "request": window.request_s,
        "watch": window.watch_s,
        "probe": window.probe_s,
        "recheck": recheck_s,
    }
    result.timing.phases_s.update({key: round(value, 4) for key, value in sides.items()})


def exclusivity(report: TimingReport, windows: list[Window], how: str) -> None:
    """What a verdict says of its timing windows: exclusive or not, verified or not, how many retimed."""
    shared = [w for w in windows if not w.exclusive]
    report.exclusive = not shared
    report.exclusive_verified = bool(windows) and all(w.verified for w in windows)
    report.windows = len(windows)
    report.retimed_windows = sum(w.retimed for w in windows)
    report.exclusivity = how if not shared else f"shared: {', '.join(shared[0].others) or 'unknown'}"
    for key in (item.name for item in fields(report) if item.name.endswith("_s")):  # seconds, rounded
        setattr(report, key, round(getattr(report, key), 3))


def time_config(
    view: SessionView,
    candidate: WorkerProcess,
    result: ConfigResult,
    spec: TimeSpec,
    baselines: dict[str, BaselineTime],
    hold: Hold,
    calibration: Calibration | None = None,
    doing: str = "timing",
) -> tuple[Timed, Window, Reading] | None:
    """Time the candidate on one config in a window of its own, bracketed by the parent's clocks (`doing`:
    "timing", or "screening" with the screen's plan); None (the failure recorded) if it failed."""
    name = label(result.index, spec.config, result.hidden, view.problem)
    eager = baselines["eager"]
    if eager.measurement is None:
        raise HarnessError(f"the reference failed while timing eager PyTorch on {name}: {eager.error}")
    view.progress(f"{doing} {name}", 0, 0)
    limit_s = timing_limit_s(view, result.index)

    def run() -> tuple[Timed | Failed | WorkerFailure, Reading | None]:
        bracket = Bracket(candidate, calibration)
        try:
            reply: Timed | Failed = candidate.request(Time(hold.timed(spec)), limit_s, f"timing {name}")
        except WorkerFailure as failure:
            return failure, None
        return reply, bracket.stop()

    (reply, reading), window = hold.window(candidate, run, lambda answer: isinstance(answer[0], Timed))
    if isinstance(reply, WorkerFailure):
        result.fail(reply.status, f"{name}: {reply}", reply.rule)
        return None
    if isinstance(reply, Failed):
        result.fail(reply.verdict_status, f"{name} while timing: {reply.reason}", reply.verdict_rule)
        return None
    assert reading is not None
    return reply, window, reading


def _judge_reply(
    view: SessionView,
    candidate: WorkerProcess,
    verdict: Verdict,
    result: ConfigResult,
    spec: TimeSpec,
    answer: tuple[Timed, Window, Reading],
    calibration: Calibration | None,
) -> bool:
    """A timed reply against what the parent knows, in the hold: its evidence, its times against the parent's
    clock, and the outputs of timed calls drawn now, read while the candidate is stopped
    (witnesses/rechecks.py); False (the failure recorded) at the first that fails. With the defences off,
    nothing is judged."""
    if not view.options.defences:
        return True
    reply, _, reading = answer
    name = label(result.index, spec.config, result.hidden, view.problem)
    gpu = view.lease.gpu
    calls = len(reply.measurement.samples_ms) + reply.measurement.warmup_calls
    described = view.described[result.index] if result.index < len(view.described) else None
    output_bytes = described.output_bytes if described is not None else None
    if (why := missing_evidence(reply.evidence, calls, marked=not gpu)) or (
        spec.retain_bytes and (why := kept_enough(reply, spec, output_bytes))
    ):
        result.fail(Status.REJECTED, f"{name}: judge state tampered: {why}", Rule.JUDGE_STATE)
        return False
    judge_bytes = 2 * (described.input_bytes or 0) + (output_bytes or 0) if described is not None else 0
    if why := faster_than_clock(reading, calibration, reply, judge_bytes, gpu):
        result.fail(
            Status.REJECTED, f"{name}: timing claims faster than the judge's clock: {why}", Rule.TIMING_CLOCK
        )
        return False
    if not spec.retain_bytes:
        return True
    draws = view.options.timed_checks
    return frozen_recheck(view.oracle, candidate, result, spec, reply, draws, gpu, name, verdict)


def _record(
    verdict: Verdict, result: ConfigResult, reply: Timed, window: Window, eager: BaselineTime, name: str
) -> None:
    """A config's time (the judge's statistics of the samples), its speedup and what ran while timed."""
    timing = Timing.of(reply.measurement, window.exclusive)
    result.timing = timing
    result.time_ms = timing.median_ms
    result.time_ci95_ms = timing.ci95_ms
    result.baseline_ms = eager.median_ms
    result.baseline_timing = eager.measurement
    result.speedup = result.baseline_ms / result.time_ms if result.time_ms and result.baseline_ms else None
    result.own_share = reply.own_share
    for op, count in reply.torch_ops.items():
        verdict.torch_ops[op] = max(count, verdict.torch_ops.get(op, 0))
    for warning in timing.warnings:
        verdict.note(f"{name}: {warning}")
    if window.retimed:
        what = plural(window.retimed, "time")
        verdict.note(f"{name}: timed again {what}: another process ran in the window ({window.others[0]})"
                     if window.others else f"{name}: timed again {what}")  # fmt: skip


def _compare_with_baselines(
    view: SessionView,
    candidate: WorkerProcess,
    verdict: Verdict,
    result: ConfigResult,
    baselines: dict[str, BaselineTime],
    config: Config,
) -> None:
    """Speedups against every baseline and the roofline; peaks measured again once (with the device
    held alone) if a baseline beat them."""
    name = label(result.index, config, result.hidden, view.problem)
    described, dtype = view.described[result.index], view.problem.dtype
    oracle = view.oracle
    beyond, impossible = apply_baselines(
        result, baselines, described, dtype, oracle.peaks, name, verdict.note
    )
    if beyond and oracle.remeasure_peaks(candidate, view.progress_line):
        assert oracle.peaks is not None
        verdict.peaks = oracle.peaks
        verdict.note("the device's peaks were measured again after a baseline beat them")
        _, impossible = apply_baselines(
            result, baselines, described, dtype, oracle.peaks, name, lambda _: None
        )
    if impossible is not None:
        result.fail(Status.REJECTED, impossible, Rule.IMPOSSIBLE_TIME)


def _no_speedup_from_shared(
    result: ConfigResult,
    baselines: dict[str, BaselineTime],
    window: Window | None,
    name: str,
    verdict: Verdict,
) -> None:
    """A time from a window that another process shared (after every retime) gives no speedup."""
    if window is not None and not window.exclusive:
        _no_speedup(result)
        verdict.note(f"{name}: no speedup reported: another process ran on the device while it was timed, "
                     f"each time ({', '.join(window.others)})")  # fmt: skip
        return
    for baseline, measured in baselines.items():
        if measured.window is None or measured.window.exclusive or baseline not in result.baselines:
            continue
        result.baselines[baseline].speedup = None
        if baseline == "eager":
            result.speedup, result.speedup_ci95 = None, None
        verdict.note(f"{name}: no speedup against {BASELINES[baseline]}: another process ran on the device "
                     f"while it was timed ({', '.join(measured.window.others)})")  # fmt: skip


def _no_speedup(result: ConfigResult) -> None:
    result.speedup, result.speedup_ci95 = None, None
    for entry in result.baselines.values():
        entry.speedup = None
