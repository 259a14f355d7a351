"""A judge session: one task, one device, many candidates, each in a fresh isolated process.

    with Judge(problem, EvalOptions(device="cuda")) as judge:
        for verdict in judge.judge_many(paths): ...
        future = judge.submit(source_text)      # as candidates come: a Future[Verdict]

What a session keeps is what candidates cannot touch: the judge's reference worker (witnesses/oracle.py:
reference outputs computed once per input set under the session's secret seed, kept on the device; comparisons
run there), the baseline worker and the baselines it timed, the device's peaks. What it starts ahead is what
costs time but no trust: candidate workers with torch imported and a CUDA context made, each used for exactly
one candidate. The protocol of a one-shot judgement is unchanged; `evaluate()` is a session of one.

Several candidates are in flight at once (`EvalOptions.in_flight`, one thread each in `judge_many` and
`submit`, stream.py; `judge` may be called from several threads): their imports, builds and correctness rounds share the
device, the judge's worker answers them one request at a time, and each candidate's timing holds the
device's timing lease (lease.py), so no other process of the session runs while it is timed.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from cudasmith.device import default_device, load_peaks, software_versions, usable_device
from cudasmith.errors import CudasmithError
from cudasmith.harness.assemble import as_given, finish
from cudasmith.harness.baselines import SessionBaselines, default_baselines
from cudasmith.harness.check_time import within_time
from cudasmith.harness.confirm import ConfirmBar
from cudasmith.harness.correctness import check_candidate, first_pass, select_configs
from cudasmith.harness.lease import lease_for
from cudasmith.harness.options import WARNING, EvalOptions, Progress
from cudasmith.harness.pool import WorkerPool
from cudasmith.harness.startup import StartClock
from cudasmith.harness.stream import Submissions, in_order, judge_as_done
from cudasmith.harness.timed import time_ahead, time_candidate
from cudasmith.harness.verdict import ConfigResult, Failure, SkippedConfig, Verdict
from cudasmith.harness.view import SessionView
from cudasmith.harness.walls import sandbox
from cudasmith.harness.walls.environment import visible_gpu
from cudasmith.harness.walls.process import WorkerFailure, WorkerProcess
from cudasmith.harness.wire.messages import Failed, LoadSolution, WorkerSetup
from cudasmith.harness.wire.status import Rule, Status
from cudasmith.harness.witnesses.bracket import calibration_plan
from cudasmith.harness.witnesses.exclusive import gpu_probe
from cudasmith.harness.witnesses.oracle import JUDGE_CALL_TIMEOUT_S, Oracle
from cudasmith.harness.witnesses.screen import screen
from cudasmith.tasks.hidden import for_session
from cudasmith.tasks.lookup import find_problem
from cudasmith.tasks.problem import Config, Problem, solution_file
from cudasmith.timing.protocol import TimingPlan, default_plan
from cudasmith.wording import plural

# How long a candidate's hold waits for the answer to its Finish request (sent there, so that the worker
# answers before the next candidate's hold pauses it; the answer is read, with the full time limit, after).
FINISH_IN_HOLD_S = 1.0


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
        self.startup = StartClock()  # where the session's start goes (startup.py)
        self.problem = problem = resolve_problem(task, problem)
        base = options or EvalOptions(device=overrides.pop("device", None) or default_device())
        self.options = options = replace(base, **overrides)
        options.validate()
        usable_device(options.device)  # the GPU named is here
        self.progress: Progress = progress or (lambda what, done, total: None)
        self.secret = options.seed if options.seed is not None else secrets.randbits(62)
        self.problem = problem = for_session(problem, self.secret)
        self.worker_device = "cuda" if options.on_gpu else "cpu"  # workers see their one GPU as cuda:0
        self.in_flight = options.candidates_in_flight()
        # The lease of this GPU as the driver names it (cuda:1 of a process that sees 2,3 is GPU 3).
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        self.lease_key = visible_gpu(options.gpu_index or 0, visible) if options.on_gpu else "cpu"
        self.lease = lease_for(self.lease_key)
        self._lock = threading.Lock()  # the session's own state, shared by the candidates in flight
        self._in_use: set[WorkerProcess] = set()  # the workers of the candidates being judged
        self._expected_at = 0  # which executor count expect() heard last
        self._submissions: Submissions | None = None  # candidates given to submit(), made by the first
        configs = [config for config, _ in problem.all_configs()]
        beside_others = self.lease.in_use()  # another session judges on this device
        # Beside another session on a GPU, the trusted workers touch the device only in a step (below).
        later = beside_others and options.on_gpu
        self.oracle = Oracle(self._start_reference(), self.lease, configs, load=not later)
        self.startup.mark("reference worker spawned")
        self._started = False
        self.device_name = options.device
        self.selected: list[tuple[int, Config, bool]] = []
        self.skipped: list[SkippedConfig] = []
        self.announced: list[str] = []  # configs whose check is estimated to take long (check_time.py)
        self.plan: TimingPlan = default_plan(options.device, options.l2_state or problem.l2_state)
        self.bar = ConfirmBar()  # what a screened candidate must come near to be confirmed (confirm.py)
        gate = self.lease.prepares if options.on_gpu else None
        # Where the parent's clock will check timed calls, each worker first times the judge's empty calls.
        calibrate = calibration_plan(self.plan) if options.timing and options.defences else None
        self.pool = WorkerPool(self._start_candidate, max(1, options.warm()), candidates, gate, calibrate)
        # The most workers expect() keeps ahead: the session's own count, which a lane that opened it with
        # fewer (only those queued for it at the time) sets back (exec/lane.py).
        self.warm_most = max(1, options.warm())
        self.pool.top_up()
        self.startup.mark("candidate workers spawned")
        names = options.baselines or default_baselines(options.device)
        self.baselines = SessionBaselines(self._start_reference, tuple(n for n in names if n != "expert" or problem.expert),
                                          self._identity())  # fmt: skip
        if options.timing and (candidates is None or candidates > 0):
            self.baselines.start(load=not later)  # its imports beside the first candidate's
            self.startup.mark("baseline worker spawned")
        self.judged = 0
        if beside_others:
            self._start_as_a_step()
        elif options.on_gpu and candidates != 0:
            threading.Thread(target=self._references_ahead, name="cudasmith-references", daemon=True).start()

    # -- workers -------------------------------------------------------------------------------

    def _setup(self, role: Literal["candidate", "reference"]) -> WorkerSetup:
        problem = self.problem
        return WorkerSetup(
            role, str(problem.path), self.worker_device, self.options.defences, problem.tolerance
        )

    def _start_reference(self) -> WorkerProcess:
        """The judge's worker or the baseline worker: watched in timing windows, never paused by its own
        session. On the CPU, other sessions' holds pause it (its imports and load are work beside their
        windows), so it starts as a step there (TimingLease.started); on a GPU its imports touch no device,
        and its device work is a step."""
        return self.lease.started(lambda: self._spawn("reference"), trusted=True, session=self)

    def _start_candidate(self) -> WorkerProcess:
        """A candidate worker, started as a step (TimingLease.started): none starts unpaused inside a
        timing window."""
        return self.lease.started(lambda: self._spawn("candidate"), session=self)

    def _spawn(self, role: Literal["candidate", "reference"]) -> WorkerProcess:
        return WorkerProcess(self._setup(role), self.options.memory_limit_bytes, self.options.gpu_index)

    def _start_as_a_step(self) -> None:
        """Finish starting this session's own workers as a step of the device's lease, waiting for them:
        another session judges here, and none of its timing windows may overlap their work (they are
        trusted workers, watched and not paused by its own holds). On the CPU the imports and the load
        begun before the step are paused by the other session's holds (lease.py), and what is left runs
        here; on a GPU only what uses the device (the CUDA contexts, the perturbation's compile) is in the
        step: the imports and the configs' description (meta tensors) go on beside the other session's
        windows. A failure is left to the first candidate, as when the start overlaps it."""
        with contextlib.suppress(CudasmithError):
            if self.options.on_gpu:
                self.oracle.wait_described()
                self.baselines.imported()
            with self.lease.step():
                self.oracle.send_load()
                self.baselines.ready()  # asks for its load first, if it has not yet
                self._start()

    def _references_ahead(self) -> None:
        """Finish the start and compute the cascade's first pass of reference outputs now, while the first
        candidate's worker starts and its solution imports, with the judge's worker otherwise idle: the
        first candidate's checks then find them made. The same session, secret and inputs as its checks
        would ask for (a guess at drawn parameters that misses costs one more reference, nothing else); a
        failure is left to the candidates' verdicts to report."""
        with contextlib.suppress(CudasmithError):
            self.oracle.loaded()  # waited for outside the session's lock, which close() takes
            self._start()
            for spec, name in first_pass(self.view):
                self.oracle.reference(spec, name)
            self.startup.mark("first references made ahead")

    def _start(self) -> None:
        """Finish starting the session (once, whichever candidate asks first): the problem loaded and
        described, the configs chosen, the GPU's activity probe made."""
        with self._lock:
            if not self._started:
                self._finish_start()
                self._started = True
                self.startup.mark("session started")

    def _finish_start(self) -> None:
        self.progress("loading the problem", 0, 1)
        loaded = self.oracle.loaded()
        self.startup.mark("problem loaded")
        self.device_name = loaded.device_name
        if self.options.on_gpu:
            launch = "graph" if self.options.graph else "queued"
            self.plan = default_plan("cuda", self.plan.l2_state, launch, loaded.launch_us)
            if not self.lease.probe.verified:  # NVML's samples of this GPU, by its UUID
                names = (loaded.gpu_uuid, self.lease_key)
                self.lease.probe = gpu_probe(*(name for name in names if name))
        described = self.oracle.described
        selected, self.skipped = select_configs(self.problem, described, self.options.device)
        # Configs whose check would take too long: announced before it starts, or not checked at all.
        peaks = load_peaks(name=self.device_name)
        rate = None if peaks is None else peaks.memory_gb_per_s
        self.selected, beyond, self.announced = within_time(
            self.problem, selected, described, self.options, rate
        )
        self.skipped += beyond
        for line in self.announced:
            self.progress(f"{WARNING}{line}", 0, 0)
        self.baselines.identity = self._identity()  # now that the device and its launch cost are known
        self.view = SessionView(self.problem, self.options, self.secret, tuple(self.selected), tuple(described),
                                self.plan, self.oracle, self.lease, self.baselines, self.progress, self, self.bar)  # fmt: skip

    def _identity(self) -> str:
        """What a baseline time kept on disk depends on besides its config (as a JSON key)."""
        identity = {"problem": self.problem.source_hash, "device": self.device_name, **software_versions(),
                    "l2": self.plan.l2_state, "launch": self.plan.launch, "launch_us": self.plan.launch_us}  # fmt: skip
        return json.dumps(identity, sort_keys=True)

    # -- judging -------------------------------------------------------------------------------

    def _allowed_torch_ops(self) -> Literal["all"] | list[str]:
        if (
            "all" in (self.problem.allowed_torch_ops, self.options.allow_torch_ops)
            or self.options.rules == "kernelbench"
        ):
            return "all"
        return [*self.problem.allowed_torch_ops, *self.options.allow_torch_ops]

    def judge(self, solution: str | Path) -> Verdict:
        """Judge one solution file and return its verdict (safe to call from several threads at once)."""
        path = solution_file(solution)
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
                verdict.status, verdict.reason, verdict.rule = Status.REJECTED, str(finding), finding.rule
                verdict.wall_s = round(time.monotonic() - started, 3)
                return verdict
        try:
            candidate = self.pool.take()
        except WorkerFailure as failure:
            if failure.rule is not Rule.INFRASTRUCTURE:
                raise
            finish(verdict, [], Failure(failure.status, failure.reason, failure.rule))
            verdict.wall_s = round(time.monotonic() - started, 3)
            return verdict
        self.startup.mark("candidate's worker taken")
        with self._lock:
            self._in_use.add(candidate)
        self.pool.top_up()
        self.pool.advance()
        try:
            # The import starts now, while the judge's worker may still be loading the problem.
            self.progress("loading the solution", 0, 1)
            load_id = candidate.send(LoadSolution(str(path.resolve()), allowed))
            self._start()
            verdict.device, verdict.skipped_configs = self.device_name, list(self.skipped)
            for line in self.announced:
                verdict.note(line)
            verdict.limits = {
                "load_s": self.options.load_timeout_s,
                "first_call_extra_s": self.options.first_call_extra_s,
            }
            self._judge_with(candidate, load_id, verdict)
        finally:
            candidate.close()
            self.pool.calibrations.pop(candidate, None)
            self._collect(candidate, verdict)
            as_given(verdict, candidate.staged, str(path))
            self.pool.advance()
            with self._lock:
                self._in_use.discard(candidate)
                self.judged += 1
        verdict.wall_s = round(time.monotonic() - started, 3)
        self.startup.mark("verdict given")
        if verdict.correct:
            self.bar.raise_to(verdict.speedup)  # a confirmed speedup (a screened-only verdict has none)
        return verdict

    def raise_bar(self, speedup: float | None) -> None:
        """The run's best confirmed speedup so far, as its search knows it: a screened candidate must come
        within the margin of it (or of the baseline) to be confirmed (confirm.py). The bar only rises."""
        self.bar.raise_to(speedup)

    def _judge_with(self, candidate: WorkerProcess, load_id: int, verdict: Verdict) -> None:
        try:
            reply = candidate.wait(load_id, self.options.load_timeout_s, "loading the solution")
        except WorkerFailure as failure:
            finish(verdict, [], Failure(failure.status, failure.reason, failure.rule))
            return
        self.startup.mark("solution loaded")
        if isinstance(reply, Failed):
            verdict.artifacts["traceback"] = reply.traceback
            if reply.compile_log:
                verdict.artifacts["compile_log"] = reply.compile_log
            finish(verdict, [], Failure(reply.verdict_status, reply.reason, reply.verdict_rule))
            return
        results = {
            i: ConfigResult(index=i, config=self._shown(i, c, h), hidden=h) for i, c, h in self.selected
        }
        correct = check_candidate(self.view, candidate, verdict, results)
        self.startup.mark("solution checked")
        ordered = [results[i] for i, _, _ in self.selected]
        asked: list[int] = []  # the Finish request sent in the candidate's hold, if it was
        if correct and self.options.timing:

            def last() -> None:  # the candidate's last request, sent while its hold keeps it running
                asked.append(candidate.ask_to_finish(FINISH_IN_HOLD_S))

            time_candidate(
                self.view, candidate, verdict, ordered, last, self.pool.calibrations.get(candidate)
            )
            self.startup.mark("solution timed")
        if all(r.status == Status.CORRECT for r in ordered):
            try:
                candidate.finish(JUDGE_CALL_TIMEOUT_S, asked[0] if asked else None)
            except WorkerFailure as failure:
                finish(verdict, ordered, Failure(failure.status, failure.reason, failure.rule))
                return
        finish(verdict, ordered)
        verdict.limits["call_s"] = max((self.view.call_limit(i) for i, _, _ in self.selected), default=0.0)

    def _shown(self, index: int, config: Config, hidden: bool) -> Config | str:
        return f"hidden#{index - len(self.problem.configs)}" if hidden else config

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

    def time_ahead(self) -> None:
        """Measure the device's peaks and time every config's baselines now, while no candidate is judged
        (a queue waiting for its builds ahead, exec/ahead.py), so that the first candidate's timing finds
        them done. Safe beside judging (each config is a hold of the lease); a failure here is left to the
        candidates' verdicts to report."""
        if not self.options.timing:
            return
        with contextlib.suppress(CudasmithError):
            self._start()
            time_ahead(self.view)

    def expect(self, queued: int, order: int = 0) -> None:
        """`queued` candidates wait for this session beyond those it judges now (an executor's count, the
        `order`-th it handed out; an older count than one heard already is ignored): at most that many
        workers are kept started ahead, and at least the few a session keeps for candidates to come."""
        with self._lock:
            if order < self._expected_at:
                return
            self._expected_at = order
            self.pool.size = min(self.warm_most, max(queued, self.options.warm_floor()))

    def judge_many(self, solutions: Iterable[str | Path]) -> Iterator[Verdict]:
        """Judge the solutions, `in_flight` at once; verdicts come in the order given."""
        return in_order(self.judge_as_done(solutions))

    def judge_as_done(self, solutions: Iterable[str | Path]) -> Iterator[tuple[int, Verdict]]:
        """Judge the solutions, `in_flight` at once, and yield (position in `solutions`, verdict) as each
        is done (stream.judge_as_done: an iterable that waits holds back no verdict)."""
        return judge_as_done(self, solutions)

    def submit(self, code: str | Path) -> Future[Verdict]:
        """Queue one candidate, its source text or its file (stream.solution_file tells which), and return
        the future of its verdict: `in_flight` are judged at once, in the order submitted. Safe from
        several threads; close() cancels those not yet taken."""
        with self._lock:
            if self._submissions is None:
                self._submissions = Submissions(self)
            submissions = self._submissions
        return submissions.submit(code)

    def close(self) -> None:
        """Stop every worker of the session, those of candidates still being judged included (their
        calls end at once, not at their time limits)."""
        with self._lock:
            judging, submissions = list(self._in_use), self._submissions
        if submissions is not None:
            submissions.cancel()
        for candidate in judging:
            candidate.terminate()
        # Every worker asked to exit before any is waited for: their exits (a CUDA context's teardown
        # each) overlap instead of adding up.
        self.pool.ask_to_exit()
        self.baselines.ask_to_exit()
        self.oracle.ask_to_exit()
        self.pool.close()
        self.baselines.close()
        self.oracle.close()
        if submissions is not None:
            submissions.close()

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
    path = solution_file(solution)
    with Judge(problem, options, progress, candidates=1) as judge:
        return judge.judge(path)
