"""A judge session: one task, one device, many candidates, each in a fresh isolated process.

    with Judge(problem, EvalOptions(device="cuda")) as judge:
        for verdict in judge.judge_many(paths): ...

What a session keeps is what candidates cannot touch: the judge's reference worker (reference outputs
computed once per input set under the session's secret seed, kept on the device; comparisons run there),
the baseline worker and the baselines it timed, the device's peaks. What it starts ahead is what costs
time but no trust: candidate workers with torch imported and a CUDA context made, each used for exactly
one candidate. The protocol of a one-shot judgement is unchanged; `evaluate()` is a session of one.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from cudasmith.device import DevicePeaks, default_device, software_versions, usable_device
from cudasmith.errors import HarnessError, UsageError
from cudasmith.harness import sandbox
from cudasmith.harness.assemble import apply_baselines, finish
from cudasmith.harness.baselines import SessionBaselines, default_baselines
from cudasmith.harness.correctness import check_candidate, label, select_configs
from cudasmith.harness.memory import too_large
from cudasmith.harness.messages import InputSpec
from cudasmith.harness.options import PROBLEM_LOAD_TIMEOUT_S, EvalOptions, Progress
from cudasmith.harness.pool import WorkerPool
from cudasmith.harness.process import WorkerFailure, WorkerProcess
from cudasmith.harness.screen import screen
from cudasmith.harness.timed import time_config
from cudasmith.harness.verdict import ConfigResult, Status, Verdict
from cudasmith.tasks.lookup import find_problem
from cudasmith.tasks.problem import Problem
from cudasmith.timing.protocol import TimingPlan, default_plan
from cudasmith.wording import plural

# The judge's own requests: computing and comparing outputs (float64 references of large configs take
# seconds on a CPU); measuring the device (first time only). Loading the problem: PROBLEM_LOAD_TIMEOUT_S.
JUDGE_CALL_TIMEOUT_S = 600.0
PEAKS_TIMEOUT_S = 300.0


def resolve_problem(
    task: str | None = None,
    problem: Problem | str | Path | None = None,
    problem_dir: str | Path | None = None,
) -> Problem:
    """The problem named by a task name (built-in, or of `problem_dir`) or given as a problem (or its
    file): exactly one."""
    if isinstance(problem, Problem) and task is None:
        return problem
    return find_problem(task, problem, problem_dir)  # type: ignore[arg-type]


class Judge:
    """Judges candidates for one problem on one device; a context manager (close() stops its workers)."""

    def __init__(
        self,
        problem: Problem | str | Path | None = None,
        options: EvalOptions | None = None,
        progress: Progress | None = None,
        candidates: int | None = None,
        *,
        task: str | None = None,
        **overrides: Any,
    ) -> None:
        """A problem (or `task=` a built-in task's name, or a problem file's path); options, or keyword
        overrides of EvalOptions' fields (`device="cpu"`); `candidates`: how many solutions will be judged,
        when known (no worker is started beyond them)."""
        self.problem = problem = resolve_problem(task, problem)
        base = options or EvalOptions(device=overrides.pop("device", None) or default_device())
        self.options = options = replace(base, **overrides)
        options.validate()
        usable_device(options.device)  # the GPU named is here
        self.progress: Progress = progress or (lambda what, done, total: None)
        self.secret = options.seed if options.seed is not None else secrets.randbits(62)
        self.worker_device = "cuda" if options.on_gpu else "cpu"  # workers see their one GPU as cuda:0
        self._judge = self._start_reference()
        self._load_id = self._judge.send({"op": "load"})
        configs = [config for config, _ in problem.all_configs()]
        self._describe_id = self._judge.send({"op": "describe", "configs": configs})
        self._started = False
        self.device_name = options.device
        self.described: list[dict[str, Any]] = []
        self.selected: list[tuple[int, dict[str, Any], bool]] = []
        self.skipped: list[dict[str, Any]] = []
        self.plan: TimingPlan = default_plan(options.device, options.l2_state or problem.l2_state)
        self.peaks: DevicePeaks | None = None
        self._peaks_asked = False
        self._peaks_remeasured = False
        self.peaks_error: str | None = None
        self._call_seconds: dict[int, float] = {}
        self.pool = WorkerPool(self._start_candidate, max(1, options.warm()), limit=candidates)
        self.pool.top_up()
        names = options.baselines or default_baselines(options.device)
        self.baselines = SessionBaselines(self._start_reference, tuple(n for n in names if n != "expert" or problem.expert),
                                          self._identity())  # fmt: skip
        self.judged = 0

    # -- workers -------------------------------------------------------------------------------

    def _setup(self, role: str) -> dict[str, Any]:
        return {"role": role, "problem": str(self.problem.path), "device": self.worker_device,
                "defences": self.options.defences, "tolerance": self.problem.tolerance}  # fmt: skip

    def _start_reference(self) -> WorkerProcess:
        return WorkerProcess(
            self._setup("reference"), self.options.memory_limit_bytes, self.options.gpu_index
        )

    def _start_candidate(self) -> WorkerProcess:
        return WorkerProcess(
            self._setup("candidate"), self.options.memory_limit_bytes, self.options.gpu_index
        )

    def _ask(
        self, header: dict[str, Any], timeout_s: float, what: str, config: tuple[int, str] | None = None
    ) -> dict[str, Any]:
        """A request to the judge's worker, whose failures are the harness's (or the problem's);
        `config`: the index and name of the config it is about."""
        try:
            reply, _ = self._judge.request(header, timeout_s, what)
        except WorkerFailure as failure:
            raise self._reference_failed(failure, config) from None
        if not reply.get("ok"):
            raise HarnessError(f"the reference failed while {what}: {reply.get('reason')}")
        return reply

    def _reference_failed(
        self, failure: WorkerFailure, config: tuple[int, str] | None = None
    ) -> HarnessError:
        """The judge's worker gave no answer (its failure says while doing what); a config too large for
        the worker's memory is named with its size."""
        if failure.over_memory and config is not None:
            index, name = config
            described = self.described[index] if index < len(self.described) else None
            return HarnessError(too_large(name, described, self._judge.memory_limit))
        return HarnessError(f"the reference failed: {failure}")

    def _start(self) -> None:
        """Finish starting the session: the problem loaded and described, the configs chosen."""
        if self._started:
            return
        self.progress("loading the problem", 0, 1)
        for request_id, what in (
            (self._load_id, "loading the problem"),
            (self._describe_id, "describing the configs"),
        ):
            try:
                reply, _ = self._judge.wait(request_id, PROBLEM_LOAD_TIMEOUT_S, what)
            except WorkerFailure as failure:
                raise self._reference_failed(failure) from None
            if not reply.get("ok"):
                raise HarnessError(f"the reference failed while {what}: {reply.get('reason')}")
            if "device_name" in reply:
                self.device_name = reply["device_name"]
                if self.options.on_gpu:
                    launch = "graph" if self.options.graph else "queued"
                    self.plan = default_plan("cuda", self.plan.l2_state, launch, reply.get("launch_us"))
            if "configs" in reply:
                self.described = reply["configs"]
        self.selected, self.skipped = select_configs(self.problem, self.described, self.options.device)
        self.baselines.identity = self._identity()  # now that the device and its launch cost are known
        self._started = True

    def _identity(self) -> dict[str, Any]:
        """What a baseline time kept on disk depends on besides its config."""
        return {"problem": self.problem.source_hash, "device": self.device_name, **software_versions(),
                "l2": self.plan.l2_state, "launch": self.plan.launch, "launch_us": self.plan.launch_us}  # fmt: skip

    # -- what the rounds use -------------------------------------------------------------------

    def reference(self, spec: InputSpec, name: str) -> dict[str, Any]:
        """The judge's reference for one input set (computed once per session) and what it noticed."""
        reply = self._ask(
            {"op": "reference", "input": spec.to_dict()},
            JUDGE_CALL_TIMEOUT_S,
            f"running the reference on {name}",
            (spec.config_index, name),
        )
        if reply.get("call_seconds") is not None:
            self._call_seconds[spec.config_index] = float(reply["call_seconds"])
        return reply

    def compare(self, items: list[tuple[InputSpec, Any]], token: str) -> list[dict[str, Any]]:
        """The judge's comparison of a candidate's exported outputs with the reference, per input set."""
        request = {"op": "compare", "token": token,
                   "items": [{"input": spec.to_dict(), "outputs": outputs} for spec, outputs in items]}  # fmt: skip
        reply = self._ask(request, JUDGE_CALL_TIMEOUT_S * max(1, len(items) // 8), "comparing outputs")
        results = reply.get("results")
        if not isinstance(results, list) or len(results) != len(items):
            raise HarnessError("the judge's worker answered a comparison with the wrong number of results")
        return results

    def call_limit(self, index: int) -> float:
        """The time limit of one call on a config (from --time-limit, or from the reference's own time)."""
        return self.options.call_limit_s(self._call_seconds.get(index))

    def output_bytes(self, index: int) -> int:
        return int(self.described[index].get("output_bytes", 0)) if index < len(self.described) else 0

    def _ensure_peaks(self, remeasure: bool = False) -> None:
        if (self._peaks_asked and not remeasure) or not self.options.timing:
            return
        self._peaks_asked = True
        self.progress(
            "measuring the device (once)" if remeasure or self.peaks is None else "device peaks", 0, 1
        )
        try:
            reply = self._ask(
                {"op": "peaks", "remeasure": remeasure}, PEAKS_TIMEOUT_S, "measuring the device"
            )
            self.peaks = DevicePeaks.from_dict(reply["peaks"])
        except HarnessError as error:
            self.peaks_error = str(error)

    # -- judging -------------------------------------------------------------------------------

    def _allowed_torch_ops(self) -> str | list[str]:
        if (
            "all" in (self.problem.allowed_torch_ops, self.options.allow_torch_ops)
            or self.options.rules == "kernelbench"
        ):
            return "all"
        return [*self.problem.allowed_torch_ops, *self.options.allow_torch_ops]

    def judge(self, solution: str | Path) -> Verdict:
        """Judge one solution file and return its verdict."""
        path = Path(solution)
        if not path.is_file():
            raise UsageError(
                f"solution file not found: {path}" if not path.exists() else f"{path} is not a file"
            )
        started = time.monotonic()
        verdict = Verdict(status=Status.CORRECT, reason="", task=self.problem.name, solution=str(path),
                          device=self.options.device, dtype=self.problem.dtype, seed=self.secret,
                          rules=self.options.rules)  # fmt: skip
        if not self.options.defences:
            verdict.note("defences were off (measuring their cost): this verdict judges nothing")
        allowed = self._allowed_torch_ops()
        if self.options.screen and self.options.defences:
            finding = screen(path.read_text(errors="replace"), allowed == "all")
            if finding is not None:
                verdict.status, verdict.reason = Status.REJECTED, str(finding)
                verdict.wall_s = round(time.monotonic() - started, 3)
                return verdict
        self._start()
        verdict.device, verdict.skipped_configs = self.device_name, list(self.skipped)
        verdict.limits = {
            "load_s": self.options.load_timeout_s,
            "first_call_extra_s": self.options.first_call_extra_s,
        }
        candidate = self.pool.take()
        self.pool.top_up()
        self.pool.advance()
        try:
            self._judge_with(candidate, path, allowed, verdict)
        finally:
            candidate.close()
            self._collect(candidate, verdict)
            self.pool.advance()
            self.judged += 1
        verdict.wall_s = round(time.monotonic() - started, 3)
        return verdict

    def _judge_with(
        self, candidate: WorkerProcess, path: Path, allowed: str | list[str], verdict: Verdict
    ) -> None:
        self.progress("loading the solution", 0, 1)
        request = {"op": "load", "solution": str(path.resolve()), "allowed_torch_ops": allowed}
        try:
            reply, _ = candidate.request(request, self.options.load_timeout_s, "loading the solution")
        except WorkerFailure as failure:
            finish(verdict, [], (failure.status, failure.reason))
            return
        if not reply.get("ok"):
            verdict.artifacts["traceback"] = str(reply.get("traceback", ""))
            if reply.get("compile_log"):
                verdict.artifacts["compile_log"] = str(reply["compile_log"])
            finish(verdict, [], (Status.parse(reply.get("status")), str(reply.get("reason", ""))))
            return
        results = {
            i: ConfigResult(index=i, config=self._shown(i, c, h), hidden=h) for i, c, h in self.selected
        }
        correct = check_candidate(self, candidate, verdict, results)
        ordered = [results[i] for i, _, _ in self.selected]
        if correct and self.options.timing:
            self._time(candidate, verdict, ordered)
        if all(r.status == Status.CORRECT for r in ordered):
            try:
                candidate.finish(JUDGE_CALL_TIMEOUT_S)
            except WorkerFailure as failure:
                finish(verdict, ordered, (failure.status, failure.reason))
                return
        finish(verdict, ordered)
        verdict.limits["call_s"] = max((self.call_limit(i) for i, _, _ in self.selected), default=0.0)

    def _shown(self, index: int, config: dict[str, Any], hidden: bool) -> dict[str, Any] | str:
        return f"hidden#{index - len(self.problem.configs)}" if hidden else config

    def _time(self, candidate: WorkerProcess, verdict: Verdict, ordered: list[ConfigResult]) -> None:
        if not self.options.on_gpu:
            self.pool.settle()  # nothing else uses the host's cores while a call is timed
        self._ensure_peaks()
        if self.peaks is not None:
            verdict.peaks = self.peaks.to_dict()
        elif self.peaks_error is not None:
            verdict.note(f"no roofline: {self.peaks_error}")
        verdict.timing = {
            "l2_state": self.plan.l2_state,
            "launch": self.plan.launch,
            "plan": asdict(self.plan),
        }
        configs = {i: c for i, c, _ in self.selected}
        for result in ordered:
            baselines = time_config(self, candidate, verdict, result, configs[result.index])
            if baselines is None:
                return
            name = label(result.index, configs[result.index], result.hidden, self.problem)
            described = self.described[result.index]
            beyond, impossible = apply_baselines(result, baselines, described, self.problem.dtype, self.peaks,
                                                 name, verdict.note)  # fmt: skip
            if beyond and not self._peaks_remeasured:
                self._peaks_remeasured = True
                self._ensure_peaks(remeasure=True)
                if self.peaks is not None:
                    verdict.peaks = self.peaks.to_dict()
                    verdict.note("the device's peaks were measured again after a baseline beat them")
                    _, impossible = apply_baselines(result, baselines, described, self.problem.dtype, self.peaks,
                                                    name, lambda text: None)  # fmt: skip
            if impossible is not None:
                result.status, result.reason = Status.REJECTED, impossible
            if result.status != Status.CORRECT:
                return

    def _collect(self, candidate: WorkerProcess, verdict: Verdict) -> None:
        """What the candidate's process left: its output, stray processes, the isolation it had."""
        stray = (candidate.status("killed_after_exit") or 0) + candidate.stray
        verdict.isolation = {"network": candidate.status("network"), "filesystem": candidate.status("filesystem"),
                             "stray_processes_killed": stray}  # fmt: skip
        if (filesystem := candidate.status("filesystem")) and not sandbox.isolated(filesystem):
            verdict.note(filesystem)
        if stray:
            verdict.note(f"killed {plural(stray, 'process', 'processes')} the solution left behind")
        for name, capture in (("stdout", candidate.stdout), ("stderr", candidate.stderr)):
            text = capture.text()
            if text.strip():
                verdict.artifacts[name] = text

    def judge_many(self, solutions: Iterable[str | Path]) -> Iterator[Verdict]:
        """Judge each solution in turn; verdicts come in the order given."""
        for solution in solutions:
            yield self.judge(solution)

    def close(self) -> None:
        """Stop every worker of the session."""
        self.pool.close()
        self.baselines.close()
        self._judge.close()

    def __enter__(self) -> Judge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def evaluate(
    solution: str | Path,
    problem: Problem,
    options: EvalOptions | None = None,
    progress: Progress | None = None,
) -> Verdict:
    """Judge one solution file against one problem (a session of one) and return the verdict."""
    path = Path(solution)
    if not path.is_file():
        raise UsageError(f"solution file not found: {path}" if not path.exists() else f"{path} is not a file")
    with Judge(problem, options, progress, candidates=1) as judge:
        return judge.judge(path)
