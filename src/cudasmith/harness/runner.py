"""The parent side of an evaluation: spawn the workers, drive them, compare, time, assemble the verdict.

The parent never imports candidate code. It owns the secret seed, the reference outputs (received from
a separate reference process) and the comparison, so nothing the candidate does in its own process can
change what it is compared against or how.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from cudasmith.device import DevicePeaks, load_peaks, software_versions
from cudasmith.errors import HarnessError, UsageError
from cudasmith.harness.baselines import BASELINES, BaselineTimer, default_baselines
from cudasmith.harness.check import judge
from cudasmith.harness.process import WorkerFailure, WorkerProcess
from cudasmith.harness.roofline import roofline
from cudasmith.harness.timing import L2_STATES, default_plan
from cudasmith.harness.verdict import ConfigResult, Verdict, geometric_mean, overall_status
from cudasmith.tasks.inputs import derive_seed, make_inputs
from cudasmith.tasks.problem import Problem, load_module

# Each config is checked on this many independently drawn input sets.
SEEDS_PER_CONFIG = 3
# Distinct input sets that timing rotates through (the worker may use fewer to fit memory).
TIMING_SEEDS = 4
# Import and compilation of a solution: load_inline builds take ~45 s each, several may be needed.
LOAD_TIMEOUT_S = 900.0
# One call of forward, first calls included (Triton compiles and autotunes then).
CALL_TIMEOUT_S = 180.0
# Timing one config: warm-up, up to timing.MAX_SECONDS of samples, and making the input sets.
TIMING_TIMEOUT_S = 300.0
# Measuring the device's peaks, once per device and software versions (seconds, first time only).
PEAKS_TIMEOUT_S = 300.0
# On the CPU, configs bigger than this (inputs plus outputs, or FLOPs) are skipped; the smallest
# public and the smallest hidden config always run.
CPU_MAX_CONFIG_BYTES = 64 * 1024**2
CPU_MAX_CONFIG_FLOPS = 2e9
# Statuses after which a worker's state cannot be trusted for more work.
FATAL = ("timeout", "compile_error", "rejected", "runtime_error")

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class EvalOptions:
    """How one evaluation runs; the defaults are the protocol."""

    device: str = "cuda"
    seeds_per_config: int = SEEDS_PER_CONFIG
    seed: int | None = None
    timing: bool = True
    load_timeout_s: float = LOAD_TIMEOUT_S
    call_timeout_s: float = CALL_TIMEOUT_S
    timing_timeout_s: float = TIMING_TIMEOUT_S
    # Baselines timed beside eager PyTorch (None: baselines.default_baselines for the device).
    baselines: tuple[str, ...] | None = None
    # L2 state while timing (None: the problem's L2_STATE, cold unless it says hot).
    l2_state: str | None = None
    # Time CUDA-graph replays of each call (for launch-bound kernels) instead of queued calls.
    graph: bool = False
    baseline_cache: bool = True


def select_configs(
    problem: Problem, descriptions: list[dict[str, Any]], device: str
) -> tuple[list[tuple[int, dict[str, Any], bool]], list[dict[str, Any]]]:
    """Configs to run (index, config, hidden) and those skipped with why; on the GPU every one runs."""
    everything = [(i, c, h) for i, (c, h) in enumerate(problem.all_configs())]
    if device.startswith("cuda"):
        return everything, []

    def size(index: int) -> float:
        described = descriptions[index]
        return float(described.get("input_bytes", 0) + described.get("output_bytes", 0))

    def too_big(index: int) -> str | None:
        described = descriptions[index]
        if size(index) > CPU_MAX_CONFIG_BYTES:
            return f"{size(index) / 2**20:.0f} MiB of inputs and outputs"
        if described.get("flops", 0) > CPU_MAX_CONFIG_FLOPS:
            return f"{described['flops'] / 1e9:.1f} GFLOP"
        return None

    selected, skipped = [], []
    for hidden in (False, True):
        group = [item for item in everything if item[2] is hidden]
        smallest = min((item[0] for item in group), key=size, default=None)
        for index, config, is_hidden in group:
            why = too_big(index)
            if why is None or index == smallest:
                selected.append((index, config, is_hidden))
            else:
                skipped.append(
                    {
                        "index": index,
                        "config": "hidden" if is_hidden else config,
                        "reason": f"too large for the CPU ({why})",
                    }
                )
    return selected, skipped


def _label(index: int, config: dict[str, Any], hidden: bool, problem: Problem) -> str:
    if hidden:
        return f"hidden config #{index - len(problem.configs)}"
    return f"config {index} {config}" if config else f"config {index}"


class Evaluation:
    """One candidate against one problem; `run()` returns the verdict."""

    def __init__(
        self, solution: Path, problem: Problem, options: EvalOptions, progress: Progress | None
    ) -> None:
        self.solution = solution
        self.problem = problem
        self.options = options
        self.progress = progress or (lambda what, done, total: None)
        self.secret = options.seed if options.seed is not None else secrets.randbits(62)
        self.verdict = Verdict(
            status="correct",
            reason="",
            task=problem.name,
            solution=str(solution),
            device=options.device,
            dtype=problem.dtype,
        )
        self._problem_module: Any = None
        self.plan = default_plan(
            options.device, options.l2_state or problem.l2_state, "graph" if options.graph else "queued"
        )
        self._descriptions: list[dict[str, Any]] = []
        self._peaks: DevicePeaks | None = None
        self._baselines: BaselineTimer | None = None

    def _request(self, worker: WorkerProcess, header: dict[str, Any], timeout_s: float, what: str) -> Any:
        """A request to the reference worker, whose failures are the harness's (or the problem's), not the candidate's."""
        try:
            reply, tensors = worker.request(header, timeout_s, what)
        except WorkerFailure as failure:
            raise HarnessError(f"the reference failed while {what}: {failure}") from None
        if not reply.get("ok"):
            raise HarnessError(f"the reference failed while {what}: {reply.get('reason')}")
        return reply, tensors

    def _validator(self, config: dict[str, Any], input_seed: int) -> tuple[Any, list[Any] | None]:
        """The problem's validate() and the inputs it judges, regenerated here from the seed."""
        if not self.problem.has_validate:
            return None, None
        if self._problem_module is None:
            self._problem_module = load_module(self.problem.path, "problem")
        return self._problem_module.validate, make_inputs(self._problem_module, config, input_seed, "cpu")

    def _check(
        self,
        reference: WorkerProcess,
        candidate: WorkerProcess,
        index: int,
        config: dict[str, Any],
        hidden: bool,
    ) -> ConfigResult:
        label = _label(index, config, hidden, self.problem)
        result = ConfigResult(
            index=index,
            config=f"hidden#{index - len(self.problem.configs)}" if hidden else config,
            hidden=hidden,
        )
        init_seed = derive_seed(self.secret, "init", index)
        worst = 0.0
        for sample in range(self.options.seeds_per_config):
            input_seed = derive_seed(self.secret, "input", index, sample)
            request = {
                "op": "run",
                "config_index": index,
                "config": config,
                "init_seed": init_seed,
                "input_seed": input_seed,
            }
            ref_reply, ref_tensors = self._request(
                reference, {**request, "float64": True}, self.options.call_timeout_s, f"running {label}"
            )
            count = ref_reply["n_outputs"]
            expected, expected64 = (
                ref_tensors[:count],
                (ref_tensors[count:] if ref_reply.get("float64") else None),
            )
            if not ref_reply.get("float64") and ref_reply.get("float64_reason"):
                note = f"no float64 reference ({ref_reply['float64_reason']}); judged against the task dtype"
                if note not in self.verdict.notes:
                    self.verdict.notes.append(note)
            try:
                reply, outputs = candidate.request(request, self.options.call_timeout_s, f"running {label}")
            except WorkerFailure as failure:
                result.status, result.reason = failure.status, f"{label}: {failure}"
                return result
            if not reply.get("ok"):
                result.status, result.reason = reply["status"], f"{label}: {reply['reason']}"
                self.verdict.artifacts.setdefault("traceback", reply.get("traceback", ""))
                return result
            validate, inputs = self._validator(config, input_seed)
            comparison = judge(outputs, expected, expected64, self.problem.tolerance, validate, inputs)
            result.seeds_checked += 1
            worst = max(worst, comparison.rel_err)
            result.rel_err = worst
            result.max_abs_err = max(result.max_abs_err or 0.0, comparison.max_abs_err)
            if not comparison.ok:
                result.status, result.reason, result.mismatch = (
                    "incorrect",
                    f"{label}: {comparison.reason}",
                    comparison.report,
                )
                return result
        result.reason = f"matches on {result.seeds_checked} input sets (worst rel_err {worst:.1e})"
        return result

    def _prepare_timing(self, reference: WorkerProcess) -> None:
        """The baseline timer and the device's peaks (measured by the reference worker the first time)."""
        self.verdict.timing = {"l2_state": self.plan.l2_state, "launch": self.plan.launch}
        names = self.options.baselines or default_baselines(self.options.device)
        identity = {"device": self.verdict.device, **software_versions()}
        self._baselines = BaselineTimer(
            self.problem, self.options.device, names, self.plan, identity, self.options.baseline_cache
        )
        self._peaks = load_peaks(self.options.device, name=self.verdict.device)
        if self._peaks is None:
            self.progress("measuring the device (once)", 0, 1)
            try:
                reply, _ = reference.request({"op": "peaks"}, PEAKS_TIMEOUT_S, "measuring the device")
            except WorkerFailure as failure:
                reply = {"ok": False, "reason": str(failure)}
            if reply.get("ok"):
                self._peaks = DevicePeaks.from_dict(reply["peaks"])
            else:
                self.verdict.notes.append(f"no roofline: measuring the device failed ({reply.get('reason')})")
        if self._peaks is not None:
            self.verdict.peaks = self._peaks.to_dict()

    def _time(
        self, candidate: WorkerProcess, result: ConfigResult, config: dict[str, Any], step: int
    ) -> None:
        request = {
            "op": "time",
            "config_index": result.index,
            "config": config,
            "init_seed": derive_seed(self.secret, "init", result.index),
            "input_seeds": [derive_seed(self.secret, "time", result.index, k) for k in range(TIMING_SEEDS)],
            "plan": asdict(self.plan),
        }
        label = _label(result.index, config, result.hidden, self.problem)
        assert self._baselines is not None
        total = 2 * len(self.verdict.configs)
        baselines = self._baselines.time(
            config, request, label, lambda what: self.progress(f"{what} on {label}", step, total)
        )
        eager = baselines["eager"]
        if "error" in eager:
            raise HarnessError(
                f"the reference failed while timing eager PyTorch on {label}: {eager['error']}"
            )
        self.progress(f"timing {label}", step, total)
        try:
            reply, _ = candidate.request(request, self.options.timing_timeout_s, f"timing {label}")
        except WorkerFailure as failure:
            result.status, result.reason = failure.status, f"{label}: {failure}"
            return
        if not reply.get("ok"):
            result.status, result.reason = reply["status"], f"{label} while timing: {reply['reason']}"
            return
        result.timing, result.baseline_timing = reply["measurement"], eager["measurement"]
        result.time_ms = reply["measurement"]["median_ms"]
        result.time_ci95_ms = reply["measurement"]["ci95_ms"]
        result.baseline_ms = eager["measurement"]["median_ms"]
        result.speedup = result.baseline_ms / result.time_ms if result.time_ms > 0 else None
        for warning in reply["measurement"].get("warnings", []):
            self._note(f"{label}: {warning}")
        self._assess(result, baselines, label)

    def _note(self, note: str) -> None:
        if note not in self.verdict.notes:
            self.verdict.notes.append(note)

    def _assess(self, result: ConfigResult, baselines: dict[str, dict[str, Any]], label: str) -> None:
        """Every baseline's speedup, the roofline and % of speed of light; an impossible time is rejected."""
        point = None
        if self._peaks is not None and result.index < len(self._descriptions):
            point = roofline(self._descriptions[result.index], self.problem.dtype, self._peaks)
        assert result.time_ms is not None
        for name, entry in baselines.items():
            if "error" in entry:
                result.baselines[name] = {"error": entry["error"]}
                self._note(f"{BASELINES[name]} not timed on {label}: {entry['error']}")
                continue
            baseline_ms = entry["measurement"]["median_ms"]
            result.baselines[name] = {
                "time_ms": baseline_ms,
                "ci95_ms": entry["measurement"]["ci95_ms"],
                "speedup": baseline_ms / result.time_ms if result.time_ms > 0 else None,
                "sol_pct": point.sol_pct(baseline_ms) if point else None,
                "method": entry["measurement"]["method"],
                "cached": entry["cached"],
            }
            if point is not None and point.impossible(baseline_ms):
                self._note(
                    f"{BASELINES[name]} on {label} beats the roofline floor: the device peaks look "
                    "underestimated (`cudasmith device --remeasure`)"
                )
        if point is None:
            return
        result.roofline = point.to_dict()
        result.sol_pct = point.sol_pct(result.time_ms)
        impossible = point.impossible(result.time_ms)
        if impossible:
            result.status, result.reason = "rejected", f"{label}: {impossible}"

    def run(self) -> Verdict:
        started = time.monotonic()
        device = self.options.device
        common = {"problem": str(self.problem.path), "device": device}
        reference = WorkerProcess({**common, "role": "reference"})
        candidate = WorkerProcess({**common, "role": "candidate", "solution": str(self.solution.resolve())})
        try:
            self.progress("loading", 0, 1)
            load_id = candidate.send({"op": "load"})
            info, _ = self._request(
                reference, {"op": "load"}, self.options.load_timeout_s, "loading the problem"
            )
            self.verdict.device = info.get("device_name", device)
            configs = [c for c, _ in self.problem.all_configs()]
            described, _ = self._request(
                reference,
                {"op": "describe", "configs": configs},
                self.options.call_timeout_s,
                "describing the configs",
            )
            self._descriptions = described["configs"]
            selected, self.verdict.skipped_configs = select_configs(
                self.problem, described["configs"], device
            )
            try:
                reply, _ = candidate.wait(load_id, self.options.load_timeout_s, "loading the solution")
            except WorkerFailure as failure:
                return self._finish(failure.status, failure.reason, candidate, started)
            if not reply.get("ok"):
                self.verdict.artifacts["traceback"] = reply.get("traceback", "")
                return self._finish(reply["status"], reply["reason"], candidate, started)
            total = len(selected) * (2 if self.options.timing else 1)
            for step, (index, config, hidden) in enumerate(selected):
                self.progress("checking", step, total)
                result = self._check(reference, candidate, index, config, hidden)
                self.verdict.configs.append(result)
                if result.status in FATAL:
                    break
            if self.options.timing and all(r.status == "correct" for r in self.verdict.configs):
                self._prepare_timing(reference)
                for step, (result, (_, config, _)) in enumerate(
                    zip(self.verdict.configs, selected, strict=True)
                ):
                    self._time(candidate, result, config, len(selected) + step)
                    if result.status != "correct":
                        break
            self.progress("done", total, total)
            status = overall_status([r.status for r in self.verdict.configs])
            failing = next((r for r in self.verdict.configs if r.status == status), None)
            return self._finish(
                status, failing.reason if status != "correct" and failing else "", candidate, started
            )
        finally:
            reference.close()
            candidate.close()
            if self._baselines is not None:
                self._baselines.close()

    def _finish(self, status: str, reason: str, candidate: WorkerProcess, started: float) -> Verdict:
        verdict = self.verdict
        verdict.status = status
        if status == "correct":
            verdict.speedup = geometric_mean([r.speedup for r in verdict.configs if r.speedup])
            for name in BASELINES:
                ratios = [r.baselines[name].get("speedup") for r in verdict.configs if name in r.baselines]
                mean = geometric_mean([x for x in ratios if x])
                if mean is not None:
                    verdict.speedups[name] = mean
            checked = sum(r.seeds_checked for r in verdict.configs)
            speed = f"; {verdict.speedup:.2f}x {verdict.baseline} (geometric mean)" if verdict.speedup else ""
            reason = f"correct on {len(verdict.configs)} configs, {checked} input sets{speed}"
        verdict.reason = reason
        candidate.close()
        for name, capture in (("stdout", candidate.stdout), ("stderr", candidate.stderr)):
            text = capture.text()
            if text.strip():
                verdict.artifacts[name] = text
        verdict.wall_s = round(time.monotonic() - started, 3)
        return verdict


def evaluate(
    solution: str | Path,
    problem: Problem,
    options: EvalOptions | None = None,
    progress: Progress | None = None,
) -> Verdict:
    """Judge one solution file against one problem and return the verdict."""
    solution = Path(solution)
    if not solution.is_file():
        raise UsageError(f"solution file not found: {solution}")
    options = options or EvalOptions()
    if options.device not in ("cuda", "cpu") and not options.device.startswith("cuda:"):
        raise UsageError(f"device must be 'cuda' or 'cpu', not {options.device!r}")
    if options.l2_state is not None and options.l2_state not in L2_STATES:
        raise UsageError(f"the L2 state must be one of {', '.join(L2_STATES)}, not {options.l2_state!r}")
    if options.graph and not options.device.startswith("cuda"):
        raise UsageError("CUDA-graph timing (--graph) needs a GPU")
    if options.device.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError("no CUDA GPU is visible here; use --device cpu (C kernels) or run on a GPU machine")
    return Evaluation(solution, problem, options, progress).run()
