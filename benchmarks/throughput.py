"""Judging throughput: one fixed batch of candidates through a judge session, one-shot `cudasmith eval`
processes and KernelBench's own evaluator, on one GPU.

    python benchmarks/throughput.py --kernelbench .kernelbench --out throughput.json    # on the GPU machine
    python benchmarks/throughput.py --approaches session,kernelbench --tasks level1/softmax,level1/relu
    python benchmarks/throughput.py --device cpu --candidates DIR --approaches oneshot   # plumbing, on a CPU
    python benchmarks/throughput.py --stream --kernelbench .kernelbench --in-flight 4   # stream mode

Stream mode (--stream, throughput_stream.py) judges many variants of one or two tasks, as a search does,
with K candidates in flight, beside KernelBench's evaluator, then checks that candidates in flight do
not change an honest kernel's time. Batch mode (the rest of this docstring) judges the fixed batch.

The batch is benchmarks/candidates/<task>/<name>.py, with EXPECTED.json (file → expected status). Steps:
  1. `cudasmith device`: the device's peaks and launch cost, measured once per machine, then copied into
     every approach's cache (not counted in any approach).
  2. The cold one-shot time: `cudasmith eval examples/softmax_cuda.py --task level1/softmax` in a fresh
     process with empty compile caches; then what a hanging kernel costs by default: `cudasmith eval` of
     the batch's candidate expected to time out, with the harness's default limits.
  3. Each approach over the batch, in the same order (cheap candidates first, load_inline builds and the
     hanging kernel last), each with empty compile caches of its own (NVRTC, Triton, torch extensions),
     so that each builds every candidate itself:
       session      the batch as `cudasmith bench` of a folder judges it, in one process: the local
                    executor's lane on the GPU (a session per task in turn, K candidates in flight), every
                    build sent ahead to the build pool as soon as the batch is queued;
       oneshot      a `cudasmith eval SOLUTION --task T --json` process per candidate, as a user would run;
       kernelbench  a process per candidate running KernelBench's eval_kernel_against_ref (5 correctness
                    trials, 100 timing trials, its first config only) from the checkout --kernelbench names
                    (its root or src/kernelbench; its commit comes from .git or a REVISION file there).
     The cudasmith approaches time eager PyTorch only (--baselines), as KernelBench does.

Per approach: the median seconds per candidate, candidates per GPU-minute (candidates judged over the
approach's wall time, process starts and session set-up included) and the GPU's busy fraction (see
BUSY_MEANING). KernelBench has no time limit of its own, so the hanging candidate would stop it for good:
it is left out there unless --kernelbench-hang is given. The whole run keeps to --budget-s: each approach
gets a share of what is left when it starts (SHARE_WEIGHTS); a candidate that does not fit is listed as
not reached, and the medians are also compared on the candidates every approach judged.
Exit code 1 when our judge (session or oneshot) calls a correct candidate wrong or a wrong one correct.

KernelBench on a machine without network: only the package folder src/kernelbench of a checkout of
ScalingIntelligence/KernelBench is needed (under 0.5 MB), e.g. in an ignored .kernelbench/ of this
repository. Its eval.py imports pydantic, requests and numpy at module level (benchmarks/
kernelbench_evaluator.py explains why its package __init__, which needs the LLM clients, is not run).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any

from child_processes import last_json, run_process, tail
from rich.console import Console
from stream_children import child_interference, child_stream
from stream_variants import PER_TASK
from throughput_report import (
    Approach,
    Candidate,
    Result,
    fresh_caches,
    judge_errors,
    kind_of,
    print_tables,
    report_lines,
)
from throughput_stream import ROW_WEIGHTS, run_stream

from cudasmith.exec.nvml import MEANING, BusySampler
from cudasmith.harness.walls.environment import visible_gpu

ROOT = Path(__file__).resolve().parents[1]
CANDIDATES = ROOT / "benchmarks" / "candidates"
APPROACHES = ("session", "oneshot", "kernelbench")
# Shares of the time left: the session and KernelBench make the comparison the issue asks for; one-shot
# processes are the slow path and get what those two leave over.
SHARE_WEIGHTS = {"session": 2.0, "oneshot": 1.0, "kernelbench": 2.0}
BUDGET_S = 480.0
# Per-candidate process limits. One-shot: today's harness lets a hanging forward run 180 s; KernelBench:
# room for a load_inline build (~45 s) and its 205 timed calls.
ONESHOT_TIMEOUT_S = 300.0
KERNELBENCH_TIMEOUT_S = 180.0
DEVICE_FACTS_TIMEOUT_S = 300.0
# The hang probe's own limit: above the 184 s a hanging forward cost before sessions (a 180 s call limit).
HANG_PROBE_TIMEOUT_S = 240.0
BUSY_MEANING = f"over the approach's wall time, {MEANING}"
COLD_EXAMPLE = {
    "cuda": ("examples/softmax_cuda.py", "level1/softmax"),
    "cpu": ("examples/softmax_cpu.py", "level1/softmax"),
}
console = Console(stderr=True, highlight=False, markup=False)


def load_batch(folder: Path, tasks: list[str] | None, only: str | None) -> list[Candidate]:
    """The batch in run order: round-robin over tasks, load_inline builds and hanging kernels last."""
    expected: dict[str, str] = json.loads((folder / "EXPECTED.json").read_text())
    batch = []
    for name, status in expected.items():
        path = folder / name
        task = str(Path(name).parent)
        if (tasks and task not in tasks) or (only and not fnmatch.fnmatch(name, only)):
            continue
        batch.append(Candidate(name, path, task, status, kind_of(path.read_text())))

    def deferred(candidate: Candidate) -> tuple[bool, bool]:
        return candidate.kind == "load_inline", candidate.expected == "timeout"

    rank, seen = {}, Counter[str]()
    for candidate in sorted(batch, key=lambda c: (deferred(c), c.name)):
        rank[candidate.name] = seen[candidate.task]
        seen[candidate.task] += 1
    return sorted(batch, key=lambda c: (deferred(c), rank[c.name], c.name))


class Runner:
    """Environment, budget and bookkeeping shared by the steps of one run."""

    def __init__(self, args: argparse.Namespace, workdir: Path, sampler: BusySampler | None) -> None:
        self.args = args
        self.workdir = workdir
        self.sampler = sampler
        self.started = time.monotonic()
        self.device_cache: Path | None = None

    def left(self) -> float:
        return self.args.budget_s - (time.monotonic() - self.started)

    @staticmethod
    def pythonpath() -> str:
        """This tree's src first, so that children judge with this checkout's cudasmith."""
        return os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)

    def env(self, label: str) -> dict[str, str]:
        """Fresh compile caches for one approach, with the device facts measured once for the machine."""
        caches = fresh_caches(self.workdir / label, self.device_cache)
        return dict(os.environ, PYTHONPATH=self.pythonpath(), PYTHONUNBUFFERED="1", **caches)

    def cudasmith_eval(self, solution: Path, task: str, env: dict[str, str], timeout_s: float) -> Result:
        command = [sys.executable, "-m", "cudasmith", "eval", str(solution), "--task", task, "--json"]
        command += ["--device", self.args.device, "--baselines", self.args.baselines]
        rc, out, err, seconds = run_process(command, env, timeout_s)
        verdict = last_json(out)
        if verdict is None and rc is None:
            return Result("stopped", seconds, f"no verdict within this script's limit of {timeout_s:.0f} s")
        if verdict is None:
            return Result("harness_error", seconds, f"no verdict, exit code {rc}: {tail(err)}")
        return Result(verdict["status"], seconds, verdict.get("reason", ""), verdict.get("speedup"))

    def device_facts(self) -> dict[str, Any]:
        """`cudasmith device` in the user's cache (measured once per machine), then its folder to copy."""
        from cudasmith.runtime.cache import cache_dir

        command = [sys.executable, "-m", "cudasmith", "device", "--json", "--device", self.args.device]
        env = dict(os.environ, PYTHONPATH=self.pythonpath())
        rc, _, err, seconds = run_process(command, env, min(DEVICE_FACTS_TIMEOUT_S, max(self.left(), 1.0)))
        self.device_cache = cache_dir("device")
        return {"seconds": seconds, "ok": rc == 0, "error": "" if rc == 0 else tail(err)}

    def cold_oneshot(self) -> dict[str, Any]:
        example, task = COLD_EXAMPLE[self.args.device]
        result = self.cudasmith_eval(ROOT / example, task, self.env("cold"), max(self.left(), 1.0))
        return {"solution": example, "task": task, **asdict(result)}

    def hang_probe(self, batch: list[Candidate]) -> dict[str, Any] | None:
        hang = next((c for c in batch if c.expected == "timeout"), None)
        if hang is None:
            return None
        limit_s = min(HANG_PROBE_TIMEOUT_S, max(self.left(), 1.0))
        result = self.cudasmith_eval(hang.path, hang.task, self.env("hang"), limit_s)
        return {"solution": hang.name, "task": hang.task, **asdict(result)}

    def run_approach(self, name: str, batch: list[Candidate], share_s: float) -> Approach:
        approach = Approach(name)
        approach.results = {c.name: Result("not reached") for c in batch}
        began = time.monotonic()
        deadline = began + share_s
        env = self.env(name)
        if name == "session":
            self._session(approach, batch, env, deadline)
        else:
            judge = self._oneshot if name == "oneshot" else self.kernelbench
            for candidate in batch:
                if (
                    name == "kernelbench"
                    and candidate.expected == "timeout"
                    and not self.args.kernelbench_hang
                ):
                    approach.results[candidate.name] = Result(
                        "left out", None, "KernelBench has no time limit"
                    )
                    continue
                if time.monotonic() >= deadline:
                    break
                result = judge(candidate, env, deadline - time.monotonic())
                approach.results[candidate.name] = result
                console.print(
                    f"[{name}] {candidate.name}: {result.status} ({result.seconds:.1f} s) {result.reason[:120]}"
                )
        approach.wall_s = time.monotonic() - began
        if self.sampler is not None:
            approach.busy_fraction = self.sampler.fraction(began, time.monotonic())
        return approach

    def _oneshot(self, candidate: Candidate, env: dict[str, str], left_s: float) -> Result:
        return self.cudasmith_eval(
            candidate.path, candidate.task, env, min(self.args.oneshot_timeout_s, left_s)
        )

    def kernelbench(self, candidate: Candidate, env: dict[str, str], left_s: float) -> Result:
        """KernelBench's evaluator on one candidate, in a process of its own."""
        from cudasmith.tasks import load_task

        problem = load_task(candidate.task)
        command = [sys.executable, str(ROOT / "benchmarks" / "kernelbench_evaluator.py")]
        command += ["--kernelbench", str(self.args.kernelbench), "--problem", str(problem.path)]
        command += ["--solution", str(candidate.path), "--precision", problem.dtype or "float32"]
        command += ["--backend", "triton" if candidate.kind == "triton" else "cuda"]
        limit_s = min(self.args.kernelbench_timeout_s, left_s)
        rc, out, err, seconds = run_process(command, env, limit_s)
        found = last_json(out)
        if found is not None:
            return Result(found["status"], seconds, found.get("reason", ""), found.get("speedup"))
        if rc is None and limit_s < self.args.kernelbench_timeout_s:
            return Result("stopped", seconds, "the approach's share of the budget ran out")
        if rc is None:  # KernelBench has no limit of its own: this script's is the verdict
            return Result("timeout", seconds, f"no result within {limit_s:.0f} s (this script's limit)")
        return Result("runtime_error", seconds, f"the process died, exit code {rc}: {tail(err)}")

    def _session(
        self, approach: Approach, batch: list[Candidate], env: dict[str, str], deadline: float
    ) -> None:
        """One child process runs a Judge per task and prints a JSON line per event; on the deadline it is
        stopped, and what it finished is kept."""
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child-session",
            "--device",
            self.args.device,
        ]
        command += ["--baselines", self.args.baselines, "--candidates", str(self.args.candidates.resolve())]
        if self.args.in_flight is not None:
            command += ["--in-flight", str(self.args.in_flight)]
        command += [c.name for c in batch]

        def on_event(line: str) -> None:
            try:
                event = json.loads(line)
            except ValueError:  # the child writes only JSON lines there; anything else is not an event
                return
            if event["event"] == "unavailable":
                approach.note = event["reason"]
                approach.results = {c.name: Result("unavailable") for c in batch}
            elif event["event"] == "setup":
                approach.setup_s[event["task"]] = event["seconds"]
                console.print(f"[session] {event['task']}: set up in {event['seconds']:.1f} s")
            elif event["event"] == "start":  # replaced by its verdict, unless the process is stopped first
                approach.results[event["name"]] = Result("stopped", None, "the share of the budget ran out")
            elif event["event"] == "candidate":
                result = Result(event["status"], event["seconds"], event["reason"], event.get("speedup"))
                approach.results[event["name"]] = result
                console.print(
                    f"[session] {event['name']}: {result.status} ({result.seconds:.1f} s) {result.reason[:120]}"
                )
                for note in event.get("shared") or []:
                    console.print(f"[session] {event['name']}: {note[:200]}")

        rc, _, err, _ = run_process(command, env, deadline - time.monotonic(), on_event)
        if rc is None:
            approach.note = approach.note or "stopped at the end of its share of the budget"
        elif rc != 0:
            approach.note = f"the session process failed, exit code {rc}: {tail(err, 3)}"


def child_session(args: argparse.Namespace, emit: Callable[..., None], factory: Any = None) -> None:
    """The session approach, in its own process, as `cudasmith bench` of a folder judges a batch: every
    candidate queued at once on the local executor's one lane for this device (a session per task in turn,
    K candidates in flight), every build sent ahead to the build pool as the queue is known. Each verdict
    is passed to `emit` as it comes. `factory`: what opens the lane's sessions (tests pass a scripted judge)."""
    from concurrent.futures import FIRST_COMPLETED, wait

    from cudasmith.exec import Job, ProblemRef, make_executor
    from cudasmith.harness.options import EvalOptions
    from cudasmith.harness.session import resolve_problem

    options = EvalOptions(device=args.device, baselines=tuple(args.baselines.split(",")))
    problems: dict[str, ProblemRef] = {}
    jobs = []
    for name in args.names:
        task = str(Path(name).parent)
        if task not in problems:
            problems[task] = ProblemRef.of(resolve_problem(task))
        path = args.candidates / name
        jobs.append(Job(name, problems[task], options, path.read_text(), path.name, str(path)))
    with make_executor("local", args.device, factory=factory, in_flight=args.in_flight) as executor:
        started = {executor.submit(job): (job, time.perf_counter()) for job in jobs}
        for job in jobs:
            emit(event="start", name=job.key)
        pending = set(started)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                job, queued = started[future]
                try:
                    verdict = future.result()
                except Exception as exc:  # a harness failure: recorded against the judge, the batch goes on
                    reason = f"{type(exc).__name__}: {exc}"[:300]
                    seconds = time.perf_counter() - queued
                    emit(
                        event="candidate",
                        name=job.key,
                        status="harness_error",
                        seconds=seconds,
                        reason=reason,
                    )
                    continue
                emit(
                    event="candidate",
                    name=job.key,
                    status=str(getattr(verdict.status, "value", verdict.status)),
                    seconds=verdict.wall_s,
                    reason=verdict.reason[:300],
                    speedup=verdict.speedup,
                    wall_s=verdict.wall_s,
                    # A window timed again, or a speedup withheld: which process shared the device.
                    shared=[
                        n
                        for n in getattr(verdict, "notes", [])
                        if "timed again" in n or "another process ran" in n
                    ],
                )


def versions(args: argparse.Namespace, sampler: BusySampler | None) -> dict[str, Any]:
    def version(package: str) -> str | None:
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return None

    def commit(folder: Path) -> str | None:
        if (folder / "REVISION").is_file():
            return (folder / "REVISION").read_text().strip()
        command = ["git", "-C", str(folder), "describe", "--always", "--dirty", "--abbrev=40"]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 else None

    return {
        "device": sampler.gpu_name if sampler else args.device,
        "torch": version("torch"),
        "triton": version("triton"),
        "cudasmith_commit": commit(ROOT),
        "kernelbench_commit": commit(args.kernelbench) if args.kernelbench else None,
    }


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--approaches", default=",".join(APPROACHES), help="comma-separated, of: " + ", ".join(APPROACHES)
    )
    parser.add_argument(
        "--kernelbench", type=Path, help="KernelBench checkout (needed for the kernelbench approach)"
    )
    parser.add_argument(
        "--candidates",
        type=Path,
        help="folder with EXPECTED.json: the batch (default benchmarks/candidates), or the stream (default: "
        "made by stream_variants.py)",
    )
    parser.add_argument("--tasks", help="only these tasks, comma-separated (level1/softmax,…)")
    parser.add_argument("--only", help="only candidates whose path matches this glob ('*/cuda_*')")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument(
        "--baselines", default="eager", help="baselines of the cudasmith approaches (default: eager)"
    )
    parser.add_argument(
        "--budget-s", type=float, default=BUDGET_S, help=f"whole run, seconds (default {BUDGET_S:.0f})"
    )
    parser.add_argument(
        "--no-cold", action="store_true", help="skip the cold one-shot eval of the softmax example"
    )
    parser.add_argument(
        "--no-hang",
        action="store_true",
        help="skip the one-shot eval of the hanging kernel with default limits",
    )
    parser.add_argument("--oneshot-timeout-s", type=float, default=ONESHOT_TIMEOUT_S)
    parser.add_argument("--kernelbench-timeout-s", type=float, default=KERNELBENCH_TIMEOUT_S)
    parser.add_argument(
        "--kernelbench-hang", action="store_true", help="give KernelBench the hanging kernel too"
    )
    parser.add_argument("--out", type=Path, help="write every number here (JSON)")
    stream = parser.add_argument_group("stream mode (throughput_stream.py)")
    stream.add_argument(
        "--stream",
        action="store_true",
        help="judge a stream of variants, as a search does, instead of the batch (--stream-kind build)",
    )
    stream.add_argument(
        "--stream-kind",
        help="the streams, comma-separated: build (stream_variants.py: NVRTC, Triton and load_inline, 24 "
        "candidates) and nobuild (stream_nobuild.py: NVRTC and Triton only, 64); implies --stream",
    )
    stream.add_argument(
        "--session-rows",
        help="the session rows, comma-separated K values: 1, default, or a number (default: 1,default and "
        "--in-flight's)",
    )
    stream.add_argument(
        "--kernelbench-weight",
        type=float,
        default=ROW_WEIGHTS["kernelbench"],
        help=f"KernelBench's share of the budget against a session row's 1 (default {ROW_WEIGHTS['kernelbench']:g}); "
        "a row cut short judges a fair sample of its stream",
    )
    stream.add_argument(
        "--in-flight",
        type=int,
        help="candidates a session keeps in flight, for its own row (K=1 and the default run too)",
    )
    stream.add_argument(
        "--stream-per-task",
        type=int,
        help=f"variants per task (default: the stream's own, {PER_TASK} for build)",
    )
    stream.add_argument("--no-interference", action="store_true", help="skip the interference check")
    parser.add_argument("--child-session", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child-stream", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child-interference", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("names", nargs="*", help=argparse.SUPPRESS)
    return parser.parse_args()


def stream_main(args: argparse.Namespace) -> int:
    """Stream mode (throughput_stream.py): the device's facts once, then its rows and the check."""
    args.stream_kinds = [k.strip() for k in (args.stream_kind or "build").split(",") if k.strip()]
    unknown = set(args.stream_kinds) - {"build", "nobuild"}
    if unknown or not args.stream_kinds:
        console.print(f"error: --stream-kind takes build and nobuild, not {sorted(unknown)}")
        return 2
    if args.session_rows is not None:
        args.session_rows = [k.strip() for k in args.session_rows.split(",") if k.strip()]
        if any(k != "default" and not k.isdigit() for k in args.session_rows):
            console.print("error: --session-rows takes 1, default or numbers, comma-separated")
            return 2
    args.row_weights = {**ROW_WEIGHTS, "kernelbench": args.kernelbench_weight}
    if args.kernelbench is not None:
        args.kernelbench = args.kernelbench.resolve()
    notes: list[str] = []
    sampler = gpu_sampler(args, notes)
    document: dict[str, Any] = {
        "versions": versions(args, sampler),
        "notes": notes,
        "busy_fraction_measures": BUSY_MEANING,
    }
    with tempfile.TemporaryDirectory(prefix="cudasmith-stream-") as directory:
        runner = Runner(args, Path(directory), sampler)
        console.print("[throughput] device facts (cudasmith device)")
        document["device_facts"] = runner.device_facts()
        code = run_stream(args, runner, document)
    if sampler is not None:
        sampler.close()
    if args.out:
        args.out.write_text(json.dumps(document, indent=2, default=str))
    return code


def gpu_sampler(args: argparse.Namespace, notes: list[str]) -> BusySampler | None:
    """NVML's sampler of the GPU's busy time, or None (with a note) where there is none."""
    if args.device != "cuda":
        return None
    try:
        return BusySampler(visible_gpu(0, os.environ.get("CUDA_VISIBLE_DEVICES")))
    except Exception as exc:  # no pynvml, or no driver: the run goes on without busy fractions
        notes.append(f"GPU busy fraction not measured: {type(exc).__name__}: {exc}")
        return None


def main() -> int:
    args = parse_args()
    child = {"child_session": child_session, "child_stream": child_stream}
    child["child_interference"] = child_interference
    chosen_child = next((run for flag, run in child.items() if getattr(args, flag)), None)
    if chosen_child is not None:
        replies = os.fdopen(os.dup(1), "w")
        os.dup2(2, 1)  # anything else printed goes to stderr, never into the replies

        lock = threading.Lock()

        def emit(**event: Any) -> None:  # from the children's threads: one whole line at a time
            with lock:
                replies.write(json.dumps(event) + "\n")
                replies.flush()

        chosen_child(args, emit)
        return 0
    if args.stream or args.stream_kind:
        return stream_main(args)
    args.candidates = args.candidates or CANDIDATES
    batch = load_batch(args.candidates, args.tasks.split(",") if args.tasks else None, args.only)
    chosen = [a.strip() for a in args.approaches.split(",") if a.strip()]
    unknown = set(chosen) - set(APPROACHES)
    if unknown or not batch:
        console.print(
            f"error: unknown approach {sorted(unknown)}" if unknown else "error: no candidate matches"
        )
        return 2
    notes = []
    if args.kernelbench is not None:
        args.kernelbench = args.kernelbench.resolve()
    if "kernelbench" in chosen and (args.kernelbench is None or args.device != "cuda"):
        chosen.remove("kernelbench")
        notes.append("kernelbench left out: it needs --kernelbench DIR and a CUDA GPU")
    sampler = gpu_sampler(args, notes)
    document: dict[str, Any] = {
        "versions": versions(args, sampler),
        "notes": notes,
        "busy_fraction_measures": BUSY_MEANING,
    }
    with tempfile.TemporaryDirectory(prefix="cudasmith-throughput-") as directory:
        runner = Runner(args, Path(directory), sampler)
        console.print("[throughput] device facts (cudasmith device)")
        document["device_facts"] = runner.device_facts()
        if not args.no_cold:
            console.print("[throughput] cold one-shot eval of the softmax example")
            document["cold_oneshot"] = runner.cold_oneshot()
        if not args.no_hang:
            console.print("[throughput] what a hanging kernel costs one-shot `cudasmith eval` by default")
            document["hang_oneshot"] = runner.hang_probe(batch)
        approaches: list[Approach] = []
        for index, name in enumerate(chosen):
            weights = [SHARE_WEIGHTS[n] for n in chosen[index:]]
            share = max(runner.left(), 0.0) * SHARE_WEIGHTS[name] / sum(weights)
            console.print(f"[throughput] {name}: {len(batch)} candidates, {share:.0f} s of the budget")
            approaches.append(runner.run_approach(name, batch, share))
    if sampler is not None:
        sampler.close()
    document["judge_errors"] = judge_errors(approaches, batch)
    document["candidates"] = [asdict(c) | {"path": str(c.path)} for c in batch]
    document["approaches"] = {
        a.name: {
            **a.summary(),
            "setup_s": a.setup_s,
            "note": a.note,
            "results": {n: asdict(r) for n, r in a.results.items()},
        }
        for a in approaches
    }
    document["lines"] = report_lines(batch, approaches, document)
    if args.out:
        args.out.write_text(json.dumps(document, indent=2))
    print_tables(batch, approaches, document)
    return 1 if document["judge_errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
