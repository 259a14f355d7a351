"""A bench over a folder of existing solutions: every file judged once, into the run store.

Every file becomes a candidate of one `bench` run before anything is judged (its source, hash, task,
sample and what another judge claimed of it), so a stopped bench resumes where it stopped
(`bench_folder(resume=RUN)`) and a verdict already in the store's evaluation cache (same code, task,
device, judge and options) is reused rather than judged again.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from concurrent.futures import as_completed
from dataclasses import dataclass, replace
from pathlib import Path

from cudasmith.bench.layout import SolutionFolder, Submission, discover
from cudasmith.errors import UsageError
from cudasmith.exec import ExecutorStats, Job, LaneChoice, Lanes, ProblemRef
from cudasmith.harness.options import EvalOptions, Progress
from cudasmith.search.judge import cache_key
from cudasmith.store import CacheKey, CandidateRecord, Run, RunStore, code_hash
from cudasmith.store.runs import load_run
from cudasmith.store.start import new_run
from cudasmith.store.summary import RunCounts
from cudasmith.tasks.problem import Problem, load_problem
from cudasmith.wording import plural

# Called with each candidate once it has its verdict, and whether the verdict came from the cache.
OnVerdict = Callable[[CandidateRecord, bool], None]
FOLDER_STRATEGY = "folder"


@dataclass
class BenchResult:
    """A bench run, what became of its candidates (over all its sessions: judged, taken from the store's
    evaluation cache…) and the files it did not judge."""

    run_id: str
    counts: RunCounts
    unmatched: list[tuple[str, str]]


def scope(tasks: list[str]) -> str:
    """What a bench covers, as its run's task: the tasks, or their count and the first."""
    tasks = sorted(set(tasks))
    return ", ".join(tasks) if len(tasks) <= 3 else f"{len(tasks)} tasks ({tasks[0]}, …)"


def _new_run(
    store: RunStore, found: SolutionFolder, options: EvalOptions, kernelbench: Path | None, lanes: LaneChoice
) -> Run:
    run = new_run(
        "bench",
        scope(list(found.problems)),
        code_hash("\n".join(f"{n} {p.source_hash}" for n, p in sorted(found.problems.items()))),
        options.device,
        options.seed,
        lanes,
        strategy=FOLDER_STRATEGY,
        options={
            **lanes.run_options(),
            "folder": str(found.root.resolve()),
            "layout": found.layout,
            "kernelbench": None if kernelbench is None else str(kernelbench.resolve()),
            "judge": options.stored(),
            "unmatched": [[str(path), why] for path, why in found.unmatched],
        },
        directory=str(found.root.resolve()),
    )
    return store.create_run(run)


def _add(store: RunStore, run: Run, submission: Submission, problem: Problem) -> CandidateRecord:
    source = submission.solution.read_text(errors="replace")
    meta = {
        "task": submission.task,
        "sample": submission.sample,
        "claimed_correct": submission.claimed_correct,
        "claimed_speedup": submission.claimed_speedup,
        "problem_path": str(problem.path),
        "task_version": problem.source_hash,
    }
    path = str(submission.solution.resolve())
    return store.add_candidate(
        run.id, submission.key, "file", source=source, code_hash=code_hash(source), path=path, meta=meta
    )


def _problem(candidate: CandidateRecord, loaded: dict[str, Problem]) -> Problem:
    """The candidate's problem, loaded once per task; refused when it changed since the run began."""
    task = candidate.meta["task"]
    if task not in loaded:
        loaded[task] = load_problem(candidate.meta["problem_path"], name=task)
    if loaded[task].source_hash != candidate.meta["task_version"]:
        raise UsageError(f"the problem of {task} changed since this bench began; start a new bench")
    return loaded[task]


def judge_pending(
    store: RunStore,
    run: Run,
    options: EvalOptions,
    progress: Progress | None = None,
    on_verdict: OnVerdict | None = None,
    lanes: LaneChoice | None = None,
) -> ExecutorStats | None:
    """Give every candidate of the run without a verdict one: from the cache, else from the executor's
    lanes (one judge session per GPU, the tasks spread over them; or a server's). Returns the executor's
    statistics."""
    lanes = lanes or Lanes()
    candidates = store.candidates(run.id)
    pending = [c for c in candidates if c.verdict is None]
    done = len(candidates) - len(pending)
    loaded: dict[str, Problem] = {}
    name, judge = lanes.device_name(options.device), lanes.judge_version()
    to_judge: list[tuple[CandidateRecord, Job, CacheKey]] = []
    if progress:  # the total first: verdicts read from the cache are counted against it
        progress("reading the store's cache", done, len(candidates))
    for candidate in sorted(pending, key=lambda c: c.meta["task"]):
        problem = _problem(candidate, loaded)
        key = cache_key(problem, options, name, judge)
        path = Path(candidate.path or "")
        if not path.is_file() or code_hash(path.read_text(errors="replace")) != candidate.code_hash:
            raise UsageError(f"{path} is gone or changed since this bench began; start a new bench")
        stored = store.cached_verdict(candidate.code_hash or "", key)
        if stored is None:
            source = path.read_text(errors="replace")
            to_judge.append(
                (
                    candidate,
                    Job(candidate.key, ProblemRef.of(problem), options, source, path.name, str(path)),
                    key,
                )
            )
            continue
        store.use_cached_verdict(candidate.id, stored.id)
        done += 1
        if on_verdict:
            on_verdict(store.candidate(candidate.id), True)
    if not to_judge:
        return None
    if progress:
        progress(f"judging {plural(len(to_judge), 'kernel')}", done, len(candidates))
    with lanes.make(options.device, options.in_flight) as executor:
        futures = {executor.submit(job): (candidate, key) for candidate, job, key in to_judge}
        for future in as_completed(futures):
            candidate, key = futures[future]
            verdict = future.result()
            store.record_verdict(candidate.id, verdict, key, candidate.code_hash, run.id, verdict.wall_s)
            done += 1
            if progress:
                progress(
                    f"{candidate.meta['task']}: {Path(candidate.path or '').name}", done, len(candidates)
                )
            if on_verdict:
                on_verdict(store.candidate(candidate.id), False)
        return executor.stats()


def bench_folder(
    store: RunStore,
    folder: str | Path | SolutionFolder | None = None,
    kernelbench: str | Path | None = None,
    options: EvalOptions | None = None,
    resume: str | None = None,
    progress: Progress | None = None,
    on_verdict: OnVerdict | None = None,
    lanes: LaneChoice | None = None,
) -> BenchResult:
    """Judge every solution in `folder` (either layout; KernelBench's with its checkout `kernelbench`;
    or what `discover` found in it) into a new bench run of `store`, or go on with the bench run `resume`; on `lanes` (default: a local
    session on each visible GPU), or those of a running server."""
    lanes = lanes or Lanes()
    if resume is not None:
        run = store.run(resume)
        if run.kind != "bench" or run.strategy != FOLDER_STRATEGY:
            raise UsageError(f"run {resume} is not a bench of a folder")
        options = EvalOptions.from_stored(run.options["judge"], run.secret_seed)
    else:
        if folder is None:
            raise UsageError("give a folder of solutions, or --resume RUN")
        found = folder if isinstance(folder, SolutionFolder) else discover(folder, kernelbench)
        options = options or EvalOptions()
        lanes.check(options.device)
        run = _new_run(store, found, options, None if kernelbench is None else Path(kernelbench), lanes)
        options = replace(options, seed=run.secret_seed)
        for submission in found.submissions:
            _add(store, run, submission, found.problems[submission.task])
    try:
        executor = judge_pending(store, run, options, progress, on_verdict, lanes)
    except BaseException as stop:
        store.update_run(run.id, status="stopped", stop_reason="interrupted; --resume goes on")
        if isinstance(stop, KeyboardInterrupt):  # Ctrl-C: where the run stands, and how to go on
            candidates = store.candidates(run.id)
            done = sum(c.verdict is not None for c in candidates)
            print(f"stopped bench {run.id}: {done}/{len(candidates)} judged; resume with "
                  f"`cudasmith bench --resume {run.id}` (same --store)", file=sys.stderr)  # fmt: skip
        raise
    store.update_run(run.id, status="finished")
    summary = replace(load_run(store, run.id).summary, executor=executor)
    store.update_run(run.id, summary=summary.to_dict())
    unmatched = [(path, why) for path, why in run.options.get("unmatched", [])]
    return BenchResult(run.id, summary.counts, unmatched)
