"""Timing one candidate, config by config, side by side with the session's baselines, with the device alone.

The candidate's timing phase holds the device's timing lease (lease.py): the steps of other candidates
in flight have finished and their workers are paused. In that hold, the device's peaks (first time
only) and every config's baselines that have no fresh measurement are timed first, then the candidate,
config by config, on input sets perturbed afresh for every call; the outputs of timed calls chosen at
random are compared with the reference for the inputs each call saw. Every timed request is a window
checked afterwards for other processes (exclusive.py): one found shared is timed again, and a time that
stayed shared is kept but gives no speedup.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

from cudasmith.errors import HarnessError
from cudasmith.harness.assemble import apply_baselines
from cudasmith.harness.baselines import BASELINES, BaselineTime
from cudasmith.harness.correctness import label
from cudasmith.harness.lease import Hold, Window
from cudasmith.harness.messages import TimeSpec
from cudasmith.harness.options import TIMING_EXTRA_S
from cudasmith.harness.process import WorkerFailure, WorkerProcess
from cudasmith.harness.verdict import ConfigResult, Status, Verdict
from cudasmith.tasks.inputs import derive_seed
from cudasmith.wording import plural

if TYPE_CHECKING:
    from cudasmith.harness.session import Judge

# Timing rotates among this many distinct input sets (the worker may use fewer to fit memory).
TIMING_SEEDS = 4


def time_spec(judge: Judge, index: int, config: dict[str, Any]) -> TimeSpec:
    """What timing one config asks for: its input sets, the session's plan, the re-checks."""
    seeds = tuple(derive_seed(judge.secret, "time", index, k) for k in range(TIMING_SEEDS))
    checks = judge.options.timed_checks if judge.options.defences else 0
    return TimeSpec(
        index, config, derive_seed(judge.secret, "init", index), seeds, asdict(judge.plan), checks
    )


def timing_limit_s(judge: Judge, index: int) -> float:
    """How long one config's timing may take: sampling, warm-up, and some calls' worth of slack."""
    plan = judge.plan
    calls = plan.min_samples + plan.warmup_calls + 4
    return TIMING_EXTRA_S + plan.max_seconds + plan.warmup_ms / 1e3 + calls * judge.call_limit(index)


def time_candidate(
    judge: Judge, candidate: WorkerProcess, verdict: Verdict, ordered: list[ConfigResult]
) -> None:
    """Time a correct candidate on every config (stopping at the first failure), with the device alone."""
    configs = {i: c for i, c, _ in judge.selected}
    windows: list[Window] = []
    with judge.lease.hold(owner=candidate) as hold:
        judge.ensure_peaks(hold)
        if judge.peaks is not None:
            verdict.peaks = judge.peaks.to_dict()
        elif judge.peaks_error is not None:
            verdict.note(f"no roofline: {judge.peaks_error}")
        verdict.timing = {
            "l2_state": judge.plan.l2_state,
            "launch": judge.plan.launch,
            "plan": asdict(judge.plan),
        }
        # Every config's baselines first: the candidate, paused while they are timed, ran just before.
        specs = {r.index: _spec(judge, r, configs[r.index]) for r in ordered}
        baselines = {
            r.index: judge.baselines.for_config(
                specs[r.index], _name(judge, r, configs), hold, judge.progress_line
            )
            for r in ordered
        }
        own: list[Window] = []
        for result in ordered:
            used = baselines[result.index]
            windows += [b.window for b in used.values() if b.window is not None]
            window = time_config(judge, candidate, verdict, result, specs[result.index], used, hold)
            if window is not None:
                own.append(window)
            if result.status != Status.CORRECT:
                break
            _compare_with_baselines(judge, verdict, result, used, configs[result.index], hold)
            _no_speedup_from_shared(result, used, window, _name(judge, result, configs), verdict)
            if result.status != Status.CORRECT:
                break
    if any(not window.exclusive for window in own):
        # All or nothing: a candidate that disturbed its own slow configs must not be judged on its fast ones.
        for result in ordered:
            _no_speedup(result)
    verdict.timing.update(exclusivity(windows + own, judge.lease.probe.how))


def _name(judge: Judge, result: ConfigResult, configs: dict[int, dict[str, Any]]) -> str:
    return label(result.index, configs[result.index], result.hidden, judge.problem)


def _spec(judge: Judge, result: ConfigResult, config: dict[str, Any]) -> TimeSpec:
    return replace(time_spec(judge, result.index, config), parameters=result.parameters_drawn)


def exclusivity(windows: list[Window], how: str) -> dict[str, Any]:
    """What a verdict says of its timing windows: exclusive or not, verified or not, how many retimed."""
    shared = [w for w in windows if not w.exclusive]
    verified = bool(windows) and all(w.verified for w in windows)
    found = {
        "exclusive": not shared,
        "exclusive_verified": verified,
        "windows": len(windows),
        "retimed_windows": sum(w.retimed for w in windows),
        "exclusivity": how
        if not shared
        else f"shared: {shared[0].others[0] if shared[0].others else 'unknown'}",
    }
    return found


def time_config(
    judge: Judge,
    candidate: WorkerProcess,
    verdict: Verdict,
    result: ConfigResult,
    spec: TimeSpec,
    baselines: dict[str, BaselineTime],
    hold: Hold,
) -> Window | None:
    """Time the candidate on one config in a window of its own and re-check its kept outputs."""
    name = label(result.index, spec.config, result.hidden, judge.problem)
    eager = baselines["eager"]
    if eager.measurement is None:
        raise HarnessError(f"the reference failed while timing eager PyTorch on {name}: {eager.error}")
    judge.progress(f"timing {name}", 0, 0)
    request = {"op": "time", "time": spec.to_dict()}

    def run() -> tuple[dict[str, Any] | None, WorkerFailure | None]:
        try:
            reply, _ = candidate.request(request, timing_limit_s(judge, result.index), f"timing {name}")
        except WorkerFailure as failure:
            return None, failure
        return reply, None

    (reply, failure), window = hold.window(candidate, run, lambda r: bool(r[0] and r[0].get("ok")))
    if failure is not None:
        result.status, result.reason = failure.status, f"{name}: {failure}"
        return None
    assert reply is not None
    if not reply.get("ok"):
        result.status = Status.parse(reply.get("status"))
        result.reason = f"{name} while timing: {reply.get('reason', '')}"
        return None
    if not _recheck(judge, candidate, verdict, result, spec, reply, name):
        return window
    measurement = reply["measurement"]
    result.timing = {**measurement, "exclusive": window.exclusive}
    result.time_ms = measurement["median_ms"]
    result.time_ci95_ms = measurement["ci95_ms"]
    result.baseline_ms = eager.median_ms
    result.baseline_timing = eager.measurement
    result.speedup = result.baseline_ms / result.time_ms if result.time_ms and result.baseline_ms else None
    result.own_share = reply.get("own_share")
    for op, count in (reply.get("torch_ops") or {}).items():
        verdict.torch_ops[op] = max(int(count), verdict.torch_ops.get(op, 0))
    for warning in measurement.get("warnings", []):
        verdict.note(f"{name}: {warning}")
    if window.retimed:
        what = plural(window.retimed, "time")
        verdict.note(f"{name}: timed again {what}: another process ran in the window ({window.others[0]})"
                     if window.others else f"{name}: timed again {what}")  # fmt: skip
    return window


def _compare_with_baselines(
    judge: Judge,
    verdict: Verdict,
    result: ConfigResult,
    baselines: dict[str, BaselineTime],
    config: dict[str, Any],
    hold: Hold,
) -> None:
    """Speedups against every baseline and the roofline; peaks measured again once if a baseline beat them."""
    name = label(result.index, config, result.hidden, judge.problem)
    described, dtype = judge.described[result.index], judge.problem.dtype
    beyond, impossible = apply_baselines(result, baselines, described, dtype, judge.peaks, name, verdict.note)
    if beyond and judge.remeasure_peaks(hold):
        assert judge.peaks is not None
        verdict.peaks = judge.peaks.to_dict()
        verdict.note("the device's peaks were measured again after a baseline beat them")
        _, impossible = apply_baselines(
            result, baselines, described, dtype, judge.peaks, name, lambda _: None
        )
    if impossible is not None:
        result.status, result.reason = Status.REJECTED, impossible


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
        result.baselines[baseline]["speedup"] = None
        if baseline == "eager":
            result.speedup, result.speedup_ci95 = None, None
        verdict.note(f"{name}: no speedup against {BASELINES[baseline]}: another process ran on the device "
                     f"while it was timed ({', '.join(measured.window.others)})")  # fmt: skip


def _no_speedup(result: ConfigResult) -> None:
    result.speedup, result.speedup_ci95 = None, None
    for entry in result.baselines.values():
        entry["speedup"] = None


def _recheck(
    judge: Judge,
    candidate: WorkerProcess,
    verdict: Verdict,
    result: ConfigResult,
    spec: TimeSpec,
    reply: dict[str, Any],
    name: str,
) -> bool:
    """The outputs of the kept timed calls against the reference for the inputs each call saw."""
    checks, outputs = reply.get("checks") or [], reply.get("outputs") or []
    items, offset = [], 0
    for check in checks:
        count = int(check["n_outputs"])
        items.append((spec.input(int(check["set"]), int(check["perturb"])), outputs[offset : offset + count]))
        offset += count
    result.checked_calls = len(items)
    if not items:
        return True
    timed_calls = int(reply.get("measurement", {}).get("n", 0))
    if len(items) < min(spec.checks, timed_calls):
        escape = 2.0 ** -len(items)
        verdict.note(
            f"{name}: {len(items)} of {timed_calls} timed calls re-checked, not {spec.checks} (their outputs are "
            f"too large to keep more): skipping the work on half the calls escapes with probability {escape:.1e}"
        )
    comparisons = judge.compare(items, candidate.token)
    for check, comparison in zip(checks, comparisons, strict=True):
        if "transfer" in comparison:
            result.status = Status.REJECTED
            result.reason = f"{name}: a timed call's outputs could not be read ({comparison['transfer']})"
            return False
        if not comparison["ok"]:
            result.status = Status.REJECTED
            result.reason = (
                f"{name}: the output of timed call {check['call']} is wrong although the checked calls were "
                f"right (a cached result, or work done only when checked): {comparison['reason']}"
            )
            return False
    return True
