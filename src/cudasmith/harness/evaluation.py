"""The parent side of one evaluation: spawn the workers, drive them, compare, time, assemble the verdict.

The parent never imports candidate code. It owns the secret seed, the reference outputs (received from
a separate reference process) and the comparison, so nothing the candidate does in its own process can
change what it is compared against or how. The rounds, per config: the problem's inputs under several
seeds; inputs the harness draws itself; then timing, with the outputs of randomly chosen timed calls
checked too; and at the end a handshake that counts the worker's messages.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import torch

from cudasmith.device import DevicePeaks, load_peaks, software_versions
from cudasmith.errors import HarnessError
from cudasmith.harness.baselines import BASELINES, BaselineTimer, default_baselines
from cudasmith.harness.check import Comparison, judge
from cudasmith.harness.process import WorkerFailure, WorkerProcess
from cudasmith.harness.roofline import roofline
from cudasmith.harness.runner import EvalOptions, Progress, select_configs
from cudasmith.harness.screen import screen
from cudasmith.harness.verdict import ConfigResult, Verdict, geometric_mean, overall_status
from cudasmith.tasks.inputs import derive_seed, make_inputs, replace_tensors
from cudasmith.tasks.problem import Problem, load_module
from cudasmith.timing.protocol import default_plan
from cudasmith.wording import plural

# Timing rotates among this many distinct input sets (the worker may use fewer to fit memory).
TIMING_SEEDS = 4
# Measuring the device's peaks, once per device and software versions (seconds, first time only).
PEAKS_TIMEOUT_S = 300.0
# Statuses after which a worker's state cannot be trusted for more work.
FATAL = ("timeout", "compile_error", "rejected", "runtime_error")
DRAWN = "harness-drawn inputs (signed, wider range than the problem's)"
# On drawn inputs where the reference implementation's own error against float64 exceeds this, the
# function is not computable in the task dtype there (a softmax saturated, gradients vanished): skipped.
DRAWN_MAX_OWN_ERROR = 0.5


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
        self.verdict = Verdict(status="correct", reason="", task=problem.name, solution=str(solution),
                               device=options.device, dtype=problem.dtype)  # fmt: skip
        self.described: list[dict[str, Any]] = []
        self._problem_module: Any = None
        launch = "graph" if options.graph else "queued"
        self.plan = default_plan(options.device, options.l2_state or problem.l2_state, launch)
        self._peaks: DevicePeaks | None = None
        self._baselines: BaselineTimer | None = None

    # -- talking to the workers -------------------------------------------------------------------

    def _ask_reference(
        self, reference: WorkerProcess, header: dict[str, Any], timeout_s: float, what: str
    ) -> Any:
        """A request to the reference worker, whose failures are the harness's (or the problem's)."""
        try:
            reply, tensors = reference.request(header, timeout_s, what)
        except WorkerFailure as failure:
            raise HarnessError(f"the reference failed while {what}: {failure}") from None
        if not reply.get("ok"):
            raise HarnessError(f"the reference failed while {what}: {reply.get('reason')}")
        return reply, tensors

    def _reference_outputs(self, reference: WorkerProcess, request: dict[str, Any], label: str) -> Any:
        """Reference outputs for one request: (task dtype, float64 or None, inputs for a validator, reply)."""
        wants_inputs = self.problem.has_validate
        reply, tensors = self._ask_reference(
            reference, {**request, "float64": True, "return_inputs": wants_inputs},
            self.options.call_timeout_s, f"running the reference on {label}",
        )  # fmt: skip
        count = reply["n_outputs"]
        expected = tensors[:count]
        expected64 = tensors[count : 2 * count] if reply.get("float64") else None
        if reply.get("float64_reason"):
            self.verdict.note(
                f"no float64 reference ({reply['float64_reason']}); judged against the task dtype"
            )
        inputs = None
        if wants_inputs:
            sent_inputs = tensors[(2 if reply.get("float64") else 1) * count :]
            inputs = replace_tensors(
                self._module_inputs(request["config"], request["input_seed"]), sent_inputs
            )
        return expected, expected64, inputs, reply

    def _module_inputs(self, config: dict[str, Any], seed: int) -> list[Any]:
        if self._problem_module is None:
            self._problem_module = load_module(self.problem.path, "problem")
        return make_inputs(self._problem_module, config, seed, "cpu")

    def _judge(self, outputs: list[torch.Tensor], expected: list[torch.Tensor],
               expected64: list[torch.Tensor] | None, inputs: list[Any] | None) -> Comparison:  # fmt: skip
        """The judgement, on this (the parent's) process: on its own GPU when evaluating on one (outputs
        of hundreds of millions of values compare in milliseconds there, in seconds on the CPU)."""
        validate = self._problem_module.validate if self.problem.has_validate else None
        if validate is None and self.options.device.startswith("cuda"):
            outputs, expected = _to(outputs, self.options.device), _to(expected, self.options.device)
            expected64 = None if expected64 is None else _to(expected64, self.options.device)
        return judge(outputs, expected, expected64, self.problem.tolerance, validate, inputs)

    def _run_candidate(self, candidate: WorkerProcess, request: dict[str, Any], result: ConfigResult,
                       label: str) -> list[torch.Tensor] | None:  # fmt: skip
        """The candidate's outputs for one request, or None after recording its failure in `result`."""
        try:
            reply, outputs = candidate.request(request, self.options.call_timeout_s, f"running {label}")
        except WorkerFailure as failure:
            result.status, result.reason = failure.status, f"{label}: {failure}"
            return None
        if not reply.get("ok"):
            result.status, result.reason = reply["status"], f"{label}: {reply['reason']}"
            self.verdict.artifacts.setdefault("traceback", reply.get("traceback", ""))
            return None
        for name, count in reply.get("torch_ops", {}).items():
            self.verdict.torch_ops[name] = max(count, self.verdict.torch_ops.get(name, 0))
        return outputs

    # -- the rounds -------------------------------------------------------------------------------

    def _request(self, index: int, config: dict[str, Any], input_seed: int, **extra: Any) -> dict[str, Any]:
        return {"op": "run", "config_index": index, "config": config, "init_seed": derive_seed(self.secret, "init", index),
                "input_seed": input_seed, "poison_bytes": self.described[index].get("output_bytes", 0), **extra}  # fmt: skip

    def _compare_once(self, reference: WorkerProcess, candidate: WorkerProcess, request: dict[str, Any],
                      result: ConfigResult, label: str) -> bool:  # fmt: skip
        """One input set: reference, candidate, judgement. False once the config has failed."""
        expected, expected64, inputs, ref_reply = self._reference_outputs(reference, request, label)
        if ref_reply.get("degenerate") and not request.get("drawn"):
            self.verdict.note(
                f"the problem's own inputs make the output trivial on {label}: {ref_reply['degenerate']}"
            )
        outputs = self._run_candidate(candidate, request, result, label)
        if outputs is None:
            return False
        comparison = self._judge(outputs, expected, expected64, inputs)
        result.seeds_checked += 1
        result.rel_err = max(result.rel_err or 0.0, comparison.rel_err)
        result.max_abs_err = max(result.max_abs_err or 0.0, comparison.max_abs_err)
        if not comparison.ok:
            result.status, result.reason, result.mismatch = (
                "incorrect",
                f"{label}: {comparison.reason}",
                comparison.report,
            )
        return comparison.ok

    def _drawn_round(self, reference: WorkerProcess, candidate: WorkerProcess, index: int,
                     config: dict[str, Any], result: ConfigResult, label: str) -> None:  # fmt: skip
        """The candidate on inputs the harness draws itself, where the reference is defined on them."""
        request = self._request(index, config, derive_seed(self.secret, "drawn", index), drawn=True)
        try:
            expected, expected64, _, _ = self._reference_outputs(reference, request, f"{label} ({DRAWN})")
        except HarnessError:
            self.verdict.note(f"{DRAWN} skipped on {label}: the reference fails on them")
            return
        truth = expected64 if expected64 is not None else expected
        if not all(bool(torch.isfinite(t).all()) for t in truth if t.is_floating_point()):
            self.verdict.note(f"{DRAWN} skipped on {label}: outside the reference's domain (NaN/Inf)")
            return
        if expected64 is not None and (own := _own_error(expected, expected64)) > DRAWN_MAX_OWN_ERROR:
            self.verdict.note(f"{DRAWN} skipped on {label}: the task dtype cannot represent the reference "
                              f"there (its own error {own:.1e}, e.g. gradients that vanish)")  # fmt: skip
            return
        self._compare_once(reference, candidate, request, result, f"{label} on {DRAWN}")

    def _check(self, reference: WorkerProcess, candidate: WorkerProcess, index: int,
               config: dict[str, Any], hidden: bool) -> ConfigResult:  # fmt: skip
        label = _label(index, config, hidden, self.problem)
        shown = f"hidden#{index - len(self.problem.configs)}" if hidden else config
        result = ConfigResult(index=index, config=shown, hidden=hidden)
        for sample in range(self.options.seeds_per_config):
            request = self._request(index, config, derive_seed(self.secret, "input", index, sample))
            if not self._compare_once(reference, candidate, request, result, label):
                return result
        if self.options.drawn_inputs and self.options.defences and not self.problem.has_validate:
            self._drawn_round(reference, candidate, index, config, result, label)
            if result.status != "correct":
                return result
        result.reason = f"matches on {plural(result.seeds_checked, 'input set')} (worst rel_err {result.rel_err or 0:.1e})"
        return result

    def _prepare_timing(self, reference: WorkerProcess) -> None:
        """The baseline timer and the device's peaks (measured by the reference worker the first time)."""
        if self.options.device.startswith("cuda"):
            from cudasmith.device.launch_cost import calibrated_launch_us

            self.plan = replace(self.plan, launch_us=calibrated_launch_us(self.verdict.device))
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
                self.verdict.note(f"no roofline: measuring the device failed ({reply.get('reason')})")
        if self._peaks is not None:
            self.verdict.peaks = self._peaks.to_dict()

    def _time(self, reference: WorkerProcess, candidate: WorkerProcess, result: ConfigResult,
              config: dict[str, Any], step: int) -> None:  # fmt: skip
        seeds = [derive_seed(self.secret, "time", result.index, k) for k in range(TIMING_SEEDS)]
        request = {"op": "time", "config_index": result.index, "config": config,
                   "init_seed": derive_seed(self.secret, "init", result.index), "input_seeds": seeds,
                   "plan": asdict(self.plan)}  # fmt: skip
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
        checks = self.options.timed_checks if self.options.defences else 0
        checked = {**request, "checks": checks}
        try:
            reply, kept = candidate.request(checked, self.options.timing_timeout_s, f"timing {label}")
        except WorkerFailure as failure:
            result.status, result.reason = failure.status, f"{label}: {failure}"
            return
        if not reply.get("ok"):
            result.status, result.reason = reply["status"], f"{label} while timing: {reply['reason']}"
            return
        if not self._recheck(reference, result, config, seeds, reply["checks"], kept, label):
            return
        result.timing, result.baseline_timing = reply["measurement"], eager["measurement"]
        result.time_ms = reply["measurement"]["median_ms"]
        result.time_ci95_ms = reply["measurement"]["ci95_ms"]
        result.baseline_ms = eager["measurement"]["median_ms"]
        result.speedup = result.baseline_ms / result.time_ms if result.time_ms > 0 else None
        for warning in reply["measurement"].get("warnings", []):
            self.verdict.note(f"{label}: {warning}")
        self._assess(result, baselines, label)

    def _recheck(self, reference: WorkerProcess, result: ConfigResult, config: dict[str, Any], seeds: list[int],
                 checks: list[dict[str, Any]], kept: list[torch.Tensor], label: str) -> bool:  # fmt: skip
        """The outputs of randomly chosen timed calls against the reference for their inputs."""
        offset = 0
        for check in checks:
            outputs = kept[offset : offset + check["n_outputs"]]
            offset += check["n_outputs"]
            ref_request = self._request(result.index, config, seeds[check["set"]], perturb=check["perturb"])
            expected, expected64, inputs, _ = self._reference_outputs(reference, ref_request, label)
            comparison = self._judge(outputs, expected, expected64, inputs)
            if not comparison.ok:
                result.status = "rejected"
                result.reason = (f"{label}: the output of timed call {check['call']} is wrong although the checked calls "
                                 f"were right (a cached result, or work done only when checked): {comparison.reason}")  # fmt: skip
                return False
        return True

    def _assess(self, result: ConfigResult, baselines: dict[str, dict[str, Any]], label: str) -> None:
        """Every baseline's speedup, the roofline and % of speed of light; an impossible time is rejected."""
        point = None
        if self._peaks is not None and result.index < len(self.described):
            point = roofline(self.described[result.index], self.problem.dtype, self._peaks)
        assert result.time_ms is not None
        for name, entry in baselines.items():
            if "error" in entry:
                result.baselines[name] = {"error": entry["error"]}
                self.verdict.note(f"{BASELINES[name]} not timed on {label}: {entry['error']}")
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
                self.verdict.note(f"{BASELINES[name]} on {label} beats the roofline floor: the device peaks look "
                                  "underestimated (`cudasmith device --remeasure`)")  # fmt: skip
        if point is None:
            return
        result.roofline = point.to_dict()
        result.sol_pct = point.sol_pct(result.time_ms)
        if impossible := point.impossible(result.time_ms):
            result.status, result.reason = "rejected", f"{label}: {impossible}"

    # -- the whole evaluation ---------------------------------------------------------------------

    def _allowed_torch_ops(self) -> str | list[str]:
        if "all" in (self.problem.allowed_torch_ops, self.options.allow_torch_ops):
            return "all"
        return [*self.problem.allowed_torch_ops, *self.options.allow_torch_ops]

    def run(self) -> Verdict:
        started = time.monotonic()
        if (
            self.options.screen
            and self.options.defences
            and (
                finding := screen(
                    self.solution.read_text(errors="replace"), self._allowed_torch_ops() == "all"
                )
            )
        ):
            self.verdict.status, self.verdict.reason = "rejected", str(finding)
            self.verdict.wall_s = round(time.monotonic() - started, 3)
            return self.verdict
        device = self.options.device
        common = {"problem": str(self.problem.path), "device": device, "defences": self.options.defences}
        if not self.options.defences:
            self.verdict.note("defences were off (measuring their cost): this verdict judges nothing")
        limit = self.options.memory_limit_bytes
        reference = WorkerProcess({**common, "role": "reference"}, limit)
        candidate = WorkerProcess({**common, "role": "candidate", "solution": str(self.solution.resolve()),
                                   "allowed_torch_ops": self._allowed_torch_ops()}, limit)  # fmt: skip
        try:
            return self._run(reference, candidate, started)
        finally:
            reference.close()
            candidate.close()
            if self._baselines is not None:
                self._baselines.close()

    def _run(self, reference: WorkerProcess, candidate: WorkerProcess, started: float) -> Verdict:
        self.progress("loading", 0, 1)
        load_id = candidate.send({"op": "load"})
        info, _ = self._ask_reference(
            reference, {"op": "load"}, self.options.load_timeout_s, "loading the problem"
        )
        self.verdict.device = info.get("device_name", self.options.device)
        configs = [c for c, _ in self.problem.all_configs()]
        described, _ = self._ask_reference(reference, {"op": "describe", "configs": configs},
                                           self.options.call_timeout_s, "describing the configs")  # fmt: skip
        self.described = described["configs"]
        selected, self.verdict.skipped_configs = select_configs(
            self.problem, self.described, self.options.device
        )
        try:
            reply, _ = candidate.wait(load_id, self.options.load_timeout_s, "loading the solution")
        except WorkerFailure as failure:
            return self._finish(failure.status, failure.reason, candidate, started)
        if not reply.get("ok"):
            self.verdict.artifacts["traceback"] = reply.get("traceback", "")
            if reply.get("compile_log"):
                self.verdict.artifacts["compile_log"] = reply["compile_log"]
            return self._finish(reply["status"], reply["reason"], candidate, started)
        total = len(selected) * (2 if self.options.timing else 1)
        for step, (index, config, hidden) in enumerate(selected):
            self.progress("checking", step, total)
            self.verdict.configs.append(self._check(reference, candidate, index, config, hidden))
            if self.verdict.configs[-1].status in FATAL:
                break
        if self.options.timing and all(r.status == "correct" for r in self.verdict.configs):
            self._prepare_timing(reference)
            for step, (result, (_, config, _)) in enumerate(zip(self.verdict.configs, selected, strict=True)):
                self._time(reference, candidate, result, config, len(selected) + step)
                if result.status != "correct":
                    break
        self.progress("done", total, total)
        status = overall_status([r.status for r in self.verdict.configs])
        failing = next((r for r in self.verdict.configs if r.status == status), None)
        if status == "correct":
            try:
                candidate.finish(self.options.call_timeout_s)
            except WorkerFailure as failure:
                return self._finish(failure.status, failure.reason, candidate, started)
        return self._finish(
            status, failing.reason if status != "correct" and failing else "", candidate, started
        )

    def _finish(self, status: str, reason: str, candidate: WorkerProcess, started: float) -> Verdict:
        verdict = self.verdict
        verdict.status = status
        if status == "correct":
            verdict.speedup = geometric_mean([r.speedup for r in verdict.configs if r.speedup])
            for name in BASELINES:
                ratios = [r.baselines[name].get("speedup") for r in verdict.configs if name in r.baselines]
                if (mean := geometric_mean([x for x in ratios if x])) is not None:
                    verdict.speedups[name] = mean
            checked = sum(r.seeds_checked for r in verdict.configs)
            speed = f"; {verdict.speedup:.2f}x {verdict.baseline} (geometric mean)" if verdict.speedup else ""
            reason = (
                f"correct on {plural(len(verdict.configs), 'config')}, {plural(checked, 'input set')}{speed}"
            )
        verdict.reason = reason
        if verdict.torch_ops:
            ops = ", ".join(f"{name} x{count}" for name, count in sorted(verdict.torch_ops.items()))
            verdict.note(f"PyTorch operators ran inside forward (allowed for this task): {ops}")
        candidate.close()
        verdict.isolation = {"network": candidate.status("network"), "stray_processes_killed":
                             (candidate.status("killed_after_exit") or 0) + candidate.stray}  # fmt: skip
        if verdict.isolation["stray_processes_killed"]:
            verdict.note(
                f"killed {plural(verdict.isolation['stray_processes_killed'], 'process', 'processes')} "
                "the solution left behind"
            )
        for name, capture in (("stdout", candidate.stdout), ("stderr", candidate.stderr)):
            text = capture.text()
            if text.strip():
                verdict.artifacts[name] = text
        verdict.wall_s = round(time.monotonic() - started, 3)
        return verdict


def _own_error(expected: list[torch.Tensor], expected64: list[torch.Tensor]) -> float:
    """The worst normwise error of the reference in the task dtype against float64, over its outputs."""
    worst = 0.0
    for own, truth in zip(expected, expected64, strict=True):
        if own.is_floating_point():
            norm = float(torch.linalg.vector_norm(truth.double()))
            difference = float(torch.linalg.vector_norm(own.double() - truth.double()))
            worst = max(worst, difference / norm if norm > 0 else (0.0 if difference == 0 else float("inf")))
    return worst


def _to(tensors: list[torch.Tensor], device: str) -> list[torch.Tensor]:
    return [t.to(device) for t in tensors]


def _label(index: int, config: dict[str, Any], hidden: bool, problem: Problem) -> str:
    if hidden:
        return f"hidden config #{index - len(problem.configs)}"
    return f"config {index} {config}" if config else f"config {index}"
