"""One call on a GPU machine: the GPU tests in one pytest process, then the benchmarks, inside one budget.

    python benchmarks/gpu_session.py --out DIR --budget-s 570                 # every step, in order
    python benchmarks/gpu_session.py --out DIR --budget-s 570 --steps tests   # some of them
    python benchmarks/gpu_session.py --out /tmp/s --budget-s 1150 --detach    # longer than one call ...
    python benchmarks/gpu_session.py --collect /tmp/s --out DIR --wait-s 580  # ... collected in later calls

Device time is lent by the minute, so a call must end with its results written, whatever ran out. Each step
is a process of its own: its lines are printed as they come (prefixed with the step's name) and kept in
DIR/STEP.log; it gets what is left of the budget less a reserve, or its own cap where that is less. A step
that would get less than its least useful time is skipped, saying so. The table printed last (and
DIR/session.json) says, per step: its exit code, its seconds, and whether it ran out of time. Steps:

  tests        pytest -m gpu, one process, serially (the exploit suite first), JUnit XML in DIR
  trust_cost   benchmarks/trust_cost.py on the GPU, then on the CPU (issue 44's cost, one run)
  throughput   benchmarks/throughput.py's no-build stream: a session against KernelBench's evaluator
  serve        benchmarks/serve_throughput.py on the no-build stream, with the exploit suite's statuses
  screening    benchmarks/optimize_gpu.py --screening (a search's screen against --confirm-all)
  session_start benchmarks/session_start.py: a fresh session's first verdict, its start step by step (47)
  races        benchmarks/stream_records.py with the judge's switch of CUPTI's event records off, then on
               (CUDASMITH_CUDA_EVENT_RECORDS; harness/workers/recording.py) under each teardown policy
               (CUDASMITH_CUPTI_TEARDOWN; timing/teardown.py)
  switch_probe the GPU tests that the switch broke on the H100 (SWITCH_PROBE), run under it

The steps run with the switch on (the judge's default) unless --event-records says otherwise. On an H100
(2026-12-07), the whole GPU suite under it, with CUPTI torn down after every recording and the teardown not
waited for, refused honest kernels in nearly every timed evaluation ("the judge's records of GPU work were
cut off while timed") and judged a CUDA graph of the candidate's own kernel a race; with each teardown
waited for and torch's capture prologue told apart, the suite passed, 64 of 64. With --event-records auto,
the steps after races run with the switch on where its run under the default policy read every pattern,
and the steps after switch_probe where the probe passed.

A device call lasts at most 10 minutes, and the GPU tests take longer. With --detach the session starts in a
process session of its own (setsid), which the machine lets run on after the call that started it returns,
until the machine goes back; each later call (made within the machine's idle release) runs --collect, which
waits for the session to end or for --wait-s, copies what it has written so far into --out, and prints the
tail of its log. The tests still run in one pytest process.

Wheels the machine lacks may be carried in .whl/ (git-ignored; scripts/serve_wheels.sh makes the server's):
they are installed first into a folder put on PYTHONPATH, never into the machine's site-packages. A
KernelBench checkout in .kernelbench serves the throughput step. A detached session reads both where its
later steps run, after the call that started it: name them in every call's carry, not only the first (on
the H100, a throughput step collected by a call that carried nothing found .kernelbench gone).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Left at the end of the budget for the table and the files to be written.
RESERVE_S = 10.0
# The files that hold GPU tests, in the order they matter most: the exploit suite first. A test file with a
# GPU test outside this list is a defect of this list: test_gpu_session.py compares it with the tests.
TEST_ORDER = (
    "tests/exploits/test_exploits_gpu.py",
    "tests/exploits/test_cold_l2_gpu.py",
    "tests/harness/test_sandbox_gpu.py",
    "tests/harness/test_sandbox.py",
    "tests/harness/test_gpu.py",
    "tests/harness/test_confirm.py",
    "tests/harness/test_references_ahead.py",
    "tests/harness/test_lease_gpu.py",
    "tests/harness/test_runtimes_gpu.py",
    "tests/timing/test_timing_gpu.py",
    "tests/runtime/test_runtime.py",
    "tests/serve/test_server_gpu.py",
)


# The races step's runs of stream_records.py: the judge's switch of CUPTI's event records off, and on around
# each recording of a call, with Kineto's teardown of CUPTI after every recording (the default policy),
# then after the calls' recordings only (timing/teardown.py; left attached throughout, it hung on the H200
# and the H100). Each run also checks that a timing recording after each call's is whole.
RACE_MODES = (
    ("off", ["CUDASMITH_CUDA_EVENT_RECORDS=0"]),
    ("every", ["CUDASMITH_CUDA_EVENT_RECORDS=1", "CUDASMITH_CUPTI_TEARDOWN=every"]),
    ("events", ["CUDASMITH_CUDA_EVENT_RECORDS=1", "CUDASMITH_CUPTI_TEARDOWN=events"]),
)


# The GPU tests that the switch broke on the H100 (with a teardown after every recording), and the race
# cheats it is for.
SWITCH_PROBE = (
    "tests/exploits/test_exploits_gpu.py::test_honest_gpu_kernel_passes_every_defence_with_timing",
    "tests/exploits/test_exploits_gpu.py::test_gpu_cheat_is_caught[13 a side stream that ended early and is never waited for]",
    "tests/exploits/test_exploits_gpu.py::test_gpu_cheat_is_caught[13 a self-wait inside torch.cuda.stream]",
    "tests/exploits/test_exploits_gpu.py::test_torch_compile_in_forward_under_each_rule_set",
    "tests/exploits/test_cold_l2_gpu.py::test_the_judge_times_the_cheat_as_cold_as_its_honest_twin",
)  # fmt: skip


# The steps whose outcome decides the switch for the steps after them (--event-records auto): the probe's
# tests, and the races step's run under the default policy.
SWITCH_DECIDERS = ("switch_probe", "stream_records_every")


def chosen_switch(outcomes: list[Outcome]) -> str | None:
    """CUDASMITH_CUDA_EVENT_RECORDS as the last of SWITCH_DECIDERS that ran found it working ("1", or "0"
    for off); None where none ran."""
    for outcome in reversed(outcomes):
        if outcome.name in SWITCH_DECIDERS and not outcome.skipped:
            return "1" if outcome.rc == 0 else "0"
    return None


@dataclass
class Step:
    name: str
    command: list[str]
    cap_s: float  # the most it may take
    least_s: float  # below this, not worth starting


@dataclass
class Outcome:
    name: str
    rc: int | None
    wall_s: float
    timed_out: bool
    skipped: str = ""


def gpu_pytest(junit: Path) -> list[str]:
    """pytest on the GPU tests in this interpreter, one process, its failures printed as they come
    (pytest_live) and its results in the JUnit XML `junit`; the test ids follow."""
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "pytest_live", "-m", "gpu",
            "-rfEs", f"--junitxml={junit}"]  # fmt: skip


def steps(
    out: Path, budget_s: float, tests: list[str] | None = None, share_s: float | None = None
) -> dict[str, list[Step]]:
    """Every step by name; `tests`: the test node ids to run instead of every GPU test (TEST_ORDER);
    `share_s`: each benchmark's own budget (default a third of the whole, at least 60 s)."""
    py = sys.executable
    share = share_s or max(60.0, budget_s / 3)
    return {
        "tests": [
            Step(
                "tests",
                [*gpu_pytest(out / "gpu_tests.xml"), "--durations=25", *(tests or TEST_ORDER)],
                budget_s,
                60.0,
            )
        ],
        "trust_cost": [
            Step(
                "trust_cost_cuda",
                [py, "benchmarks/trust_cost.py", "--device", "cuda", "--repeats", "3"],
                share,
                60,
            ),
            Step(
                "trust_cost_cpu",
                [py, "benchmarks/trust_cost.py", "--device", "cpu", "--repeats", "3"],
                share,
                60,
            ),
        ],
        "throughput": [
            Step(
                "throughput",
                [
                    py,
                    "benchmarks/throughput.py",
                    "--stream-kind",
                    "nobuild",
                    "--session-rows",
                    "default",
                    "--kernelbench",
                    ".kernelbench",
                    "--kernelbench-weight",
                    "1.0",
                    "--no-interference",
                    "--budget-s",
                    f"{share:.0f}",
                    "--out",
                    str(out / "throughput.json"),
                ],
                share + 60,
                120.0,
            )
        ],
        "serve": [
            Step(
                "serve",
                [
                    py,
                    "benchmarks/serve_throughput.py",
                    "--candidates",
                    "nobuild",
                    "--budget-s",
                    f"{share:.0f}",
                    "--out",
                    str(out / "serve_throughput.json"),
                ],
                share + 90,
                120.0,
            )
        ],
        "races": [
            Step(
                f"stream_records_{mode}",
                [
                    "env",
                    *assignments,
                    py,
                    "benchmarks/stream_records.py",
                    "--raw",
                    "--calls",
                    "2",
                    "--hang-s",
                    "40",
                ],
                55.0,
                20.0,
            )
            for mode, assignments in RACE_MODES
        ],
        "switch_probe": [
            Step(
                "switch_probe",
                [
                    "env",
                    "CUDASMITH_CUDA_EVENT_RECORDS=1",
                    *gpu_pytest(out / "switch_probe.xml"),
                    *SWITCH_PROBE,
                ],
                240.0,
                60.0,
            )
        ],
        "session_start": [
            Step(
                "session_start",
                [py, "benchmarks/session_start.py", "--runs", "2", "--out", str(out / "session_start.json")],
                150.0,
                40.0,
            )
        ],
        "screening": [
            Step(
                "screening",
                [py, "benchmarks/optimize_gpu.py", "--screening", "--out", str(out / "screening")],
                share,
                120.0,
            )
        ],
    }


def install_wheels(folder: Path, env: dict[str, str]) -> str:
    """The wheels in `folder` installed into a folder of their own, put first on PYTHONPATH; what was done."""
    wheels = sorted(folder.glob("*.whl"))
    if not wheels:
        return "no wheels carried"
    target = Path(tempfile.mkdtemp(prefix="cudasmith-wheels-"))
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
         "--no-cache-dir", "--target", str(target), *map(str, wheels)],
        check=True,
    )  # fmt: skip
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(target), env.get("PYTHONPATH")]))
    return f"{len(wheels)} wheels installed into {target}"


def run_step(step: Step, limit_s: float, out: Path, env: dict[str, str]) -> Outcome:
    """Run one step, its lines printed as they come and kept in out/NAME.log; killed at `limit_s`."""
    started = time.monotonic()
    print(f"== {step.name} (up to {limit_s:.0f} s): {' '.join(step.command)}", flush=True)
    with open(out / f"{step.name}.log", "w") as log:
        process = subprocess.Popen(
            step.command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
        )  # fmt: skip
        assert process.stdout is not None

        def copy() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                log.write(line)
                log.flush()
                print(f"[{step.name}] {line}", end="", flush=True)

        reader = threading.Thread(target=copy, daemon=True)
        reader.start()
        try:
            rc: int | None = process.wait(timeout=limit_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
            rc, timed_out = None, True
        reader.join(timeout=5)
    return Outcome(step.name, rc, round(time.monotonic() - started, 1), timed_out)


def detach(argv: list[str], out: Path) -> int:
    """Start this session again in a process session of its own, its output in out/session.log."""
    out.mkdir(parents=True, exist_ok=True)
    again = [sys.executable, str(Path(__file__).resolve()), *(a for a in argv if a != "--detach")]
    with open(out / "session.log", "w") as log:
        process = subprocess.Popen(
            again,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    print(
        f"session started (pid {process.pid}), writing to {out}; collect it with --collect {out}", flush=True
    )
    return 0


def collect(source: Path, out: Path, wait_s: float) -> int:
    """Wait for a detached session to end (its session.json written) or for `wait_s`; copy what it wrote so
    far into `out`; print the tail of its log. 0: it has ended; 3: it is still running."""
    deadline = time.monotonic() + wait_s
    done = source / "session.json"
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(2.0)
    out.mkdir(parents=True, exist_ok=True)
    for path in sorted(source.iterdir()) if source.is_dir() else []:
        if path.is_file():
            (out / path.name).write_bytes(path.read_bytes())
    log = source / "session.log"
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    print("\n".join(line for line in lines[-200:] if not line.startswith("[tests] .")), flush=True)
    ended = done.exists()
    print(f"session {'ended' if ended else 'still running'}: {len(lines)} lines of log", flush=True)
    return 0 if ended else 3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the logs, JSON and JUnit XML")
    parser.add_argument("--budget-s", type=float, help="the whole session's seconds (not with --collect)")
    parser.add_argument(
        "--share-s", type=float, help="each benchmark's own budget (default a third of the whole)"
    )
    parser.add_argument("--detach", action="store_true", help="run on in a process session of its own")
    parser.add_argument("--collect", type=Path, metavar="DIR", help="a detached session's --out, to collect")
    parser.add_argument(
        "--wait-s", type=float, default=0.0, help="with --collect: the most to wait for its end"
    )
    parser.add_argument("--steps", default="tests,trust_cost,throughput,serve,screening",
                        help="comma-separated, in order: tests, trust_cost (or trust_cost_cuda, trust_cost_cpu), throughput, serve, screening, session_start, races, switch_probe")  # fmt: skip
    parser.add_argument(
        "--wheels", type=Path, default=ROOT / ".whl", help="wheels to install first (default .whl)"
    )
    parser.add_argument(
        "--tests", type=Path, help="a file of test node ids, one a line: only those (re-runs)"
    )
    parser.add_argument("--event-records", choices=("auto", "off", "1"), default="1",
                        help="CUDASMITH_CUDA_EVENT_RECORDS for the steps: 1 (default, the judge's), off, or auto: "
                        "after the races step or the switch_probe, what that step found working")  # fmt: skip
    args = parser.parse_args()
    if args.collect is not None:
        return collect(args.collect, args.out, args.wait_s)
    if args.budget_s is None:
        parser.error("--budget-s is needed (but for --collect)")
    if args.detach:
        return detach(sys.argv[1:], args.out)
    deadline = time.monotonic() + args.budget_s - RESERVE_S
    tests = [line for line in args.tests.read_text().splitlines() if line.strip()] if args.tests else None
    known = steps(args.out, args.budget_s, tests, args.share_s)
    chosen = [name.strip() for name in args.steps.split(",") if name.strip()]
    # A group's name runs its steps; a step's own name (trust_cost_cpu) runs that step alone.
    by_name = {step.name: [step] for group in known.values() for step in group} | known
    unknown = [name for name in chosen if name not in by_name]
    if unknown:
        parser.error(f"unknown step(s) {', '.join(unknown)}; known: {', '.join(by_name)}")
    args.out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    # the package as this checkout has it, and benchmarks/ for the tests' live report (pytest_live.py)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT / "src"), str(ROOT / "benchmarks"), env.get("PYTHONPATH")])
    )
    print(f"wheels: {install_wheels(args.wheels, env)}", flush=True)
    if args.event_records != "auto":
        env["CUDASMITH_CUDA_EVENT_RECORDS"] = "0" if args.event_records == "off" else args.event_records
    outcomes: list[Outcome] = []
    for step in (step for name in chosen for step in by_name[name]):
        left = deadline - time.monotonic()
        if left < step.least_s:
            outcomes.append(
                Outcome(step.name, None, 0.0, False, f"{left:.0f} s left, needs {step.least_s:.0f}")
            )
            print(f"== {step.name}: skipped ({outcomes[-1].skipped})", flush=True)
            continue
        outcomes.append(run_step(step, min(step.cap_s, left), args.out, env))
        if step.name in SWITCH_DECIDERS and args.event_records == "auto":
            switch = chosen_switch(outcomes)
            if switch is not None:
                env["CUDASMITH_CUDA_EVENT_RECORDS"] = switch
            print(f"== the steps after this run with CUDASMITH_CUDA_EVENT_RECORDS="
                  f"{env.get('CUDASMITH_CUDA_EVENT_RECORDS')}", flush=True)  # fmt: skip
    print(f"\nCUDASMITH_CUDA_EVENT_RECORDS at the end: {env.get('CUDASMITH_CUDA_EVENT_RECORDS')}")
    width = max([len("step"), *(len(o.name) for o in outcomes)])
    print(f"\n{'step':<{width}} {'rc':>4} {'wall s':>8}  note")
    for o in outcomes:
        note = o.skipped or ("ran out of time (killed)" if o.timed_out else "")
        print(f"{o.name:<{width}} {'-' if o.rc is None else o.rc:>4} {o.wall_s:>8.1f}  {note}")
    (args.out / "session.json").write_text(json.dumps([asdict(o) for o in outcomes], indent=2))
    return 0 if all(o.rc == 0 for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
