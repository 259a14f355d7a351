"""The judge as a service against the judge in-process, in one run: the same candidates judged (a) through
`Judge.submit` in this process (a session per task, the default K candidates in flight) and (b) through
`cudasmith serve` and its client (a server on one GPU of this machine, its executor's default K); then the
exploit suite's solutions (tests/exploits) through both, whose statuses must agree.

    python benchmarks/serve_throughput.py                                   # on the GPU machine
    python benchmarks/serve_throughput.py --candidates nobuild --budget-s 1500
    python benchmarks/serve_throughput.py --device cpu --candidates DIR --no-exploits   # plumbing, on a CPU

--candidates: a folder of `<task>/<name>.py` with EXPECTED.json (file → status), such as
benchmarks/candidates (the default); or `nobuild`, the stream of throughput.py's stream mode
(stream_variants.py) less its `load_inline` variants: NVRTC and Triton kernels, whose compiles take a
fraction of a second. Each approach judges task by task (all of a task's candidates submitted at once,
then the next task), with empty compile caches of its own and the device's facts measured once for both;
(b) submits with fresh=true, so the server's evaluation cache gives nothing away. Neither counts its
process start (importing torch); both count their sessions' starts. Baselines: eager PyTorch only
(--baselines), as throughput.py times them.

Prints one table (candidates, wall s, candidates per GPU-minute, (b)/(a)) and the exploit check. Exit code 1
when (b)/(a) is under --target (0.95), an exploit's status differs between the two, or a candidate got
another status than EXPECTED.json says.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from throughput_report import fresh_caches

ROOT = Path(__file__).resolve().parents[1]
BATCH = ROOT / "benchmarks" / "candidates"
EXPLOIT_TABLE = ROOT / "tests" / "exploits" / "test_exploits_gpu.py"
# A variant that builds a torch extension (tens of seconds of nvcc) is not in the no-build stream.
BUILDS = re.compile(r"load_inline|cpp_extension")
# The exploit table's EvalOptions overrides, as a request's options; `screen` has none (a server always
# screens), so both sides judge with the screen on.
REQUEST_NAMES = {"timing": "timing", "first_call_extra_s": "first_call_extra", "load_timeout_s": "load_time_limit",
                 "call_timeout_s": "time_limit", "seeds_per_config": "seeds", "baselines": "baselines"}  # fmt: skip
SERVER_START_S = 300.0
console = Console(highlight=False)


@dataclass(frozen=True)
class Candidate:
    """One solution: its name, file, task and the status it should get (None: not known)."""

    name: str
    path: Path
    task: str
    expected: str | None


@dataclass
class Approach:
    """What one approach judged: statuses by candidate name, and its wall time over the candidates."""

    label: str
    statuses: dict[str, str] = field(default_factory=dict)
    wall_s: float = 0.0

    def per_gpu_minute(self) -> float | None:
        return len(self.statuses) / (self.wall_s / 60.0) if self.wall_s > 0 else None


def load_candidates(choice: str, workdir: Path) -> list[Candidate]:
    """The candidates of `choice` (a folder with EXPECTED.json, or `nobuild`), grouped by task."""
    if choice == "nobuild":
        from stream_variants import write_stream

        folder = workdir / "stream"
        expected = {name: status for name, status in write_stream(folder).items()
                    if not BUILDS.search((folder / name).read_text())}  # fmt: skip
    else:
        folder = Path(choice)
        expected = json.loads((folder / "EXPECTED.json").read_text())
    found = [
        Candidate(name, folder / name, str(Path(name).parent), status) for name, status in expected.items()
    ]
    return sorted(found, key=lambda c: c.task)


def by_task(candidates: list[Candidate]) -> dict[str, list[Candidate]]:
    groups: dict[str, list[Candidate]] = {}
    for candidate in candidates:
        groups.setdefault(candidate.task, []).append(candidate)
    return groups


def in_process(
    candidates: list[Candidate], device: str, baselines: tuple[str, ...], left: Callable[[], float]
) -> Approach:
    """(a): a Judge session per task in this process, every candidate given to Judge.submit at once."""
    from cudasmith import Judge

    approach = Approach("(a) in-process, Judge.submit")
    for task, group in by_task(candidates).items():
        if left() <= 0:
            break
        started = time.monotonic()
        with Judge(task=task, device=device, baselines=baselines) as judge:
            futures = {c.name: judge.submit(c.path) for c in group}
            approach.statuses.update({name: future.result().status.value for name, future in futures.items()})
        approach.wall_s += time.monotonic() - started
    return approach


class Served:
    """`cudasmith serve` on one GPU, in a process of its own with its own caches and store."""

    def __init__(
        self, device: str, baselines: str, env: dict[str, str], store: Path, flags: list[str]
    ) -> None:
        command = [sys.executable, "-m", "cudasmith", "serve", "--device", device, "--port", "0",
                   "--store", str(store), "--baselines", baselines, *flags]  # fmt: skip
        if device.startswith("cuda"):
            command += ["--gpus", "1"]
        self.log = store.with_suffix(".log").open("w")
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self.log, text=True, env=env)
        assert self.process.stdout is not None
        deadline = time.monotonic() + SERVER_START_S
        self.url = ""
        while not self.url and time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"the server stopped; its log: {self.log.name}")
            if found := re.search(r"listening on (http://\S+)", line):
                self.url = found.group(1)

    def close(self) -> None:
        self.process.send_signal(2)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


def through_server(
    candidates: list[Candidate], url: str, options: dict[str, Any], left: Callable[[], float]
) -> Approach:
    """(b): the same, task by task, every candidate of a task submitted at once through the client."""
    from cudasmith import Client

    client = Client(url)
    approach = Approach("(b) cudasmith serve + Client")
    for task, group in by_task(candidates).items():
        if left() <= 0:
            break
        started = time.monotonic()
        ids = client.submit_many([c.path for c in group], task=task, options=options, fresh=True)
        approach.statuses.update(
            {c.name: client.result(id).status.value for c, id in zip(group, ids, strict=True)}
        )
        approach.wall_s += time.monotonic() - started
    return approach


def exploit_cases() -> list[tuple[str, Path, str, dict[str, Any]]]:
    """The GPU exploit table (tests/exploits/test_exploits_gpu.py): name, solution, task, EvalOptions."""
    spec = importlib.util.spec_from_file_location("exploit_table", EXPLOIT_TABLE)
    assert spec is not None and spec.loader is not None
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    cases = [
        (rule, table.SOLUTIONS / name, task, overrides) for rule, name, task, _, _, overrides in table.CHEATS
    ]
    cases += [(kind, table.SOLUTIONS / name, "level1/relu", {}) for kind, name, _ in table.HONEST]
    cases += [(fault, path, "level1/vector_add", overrides) for fault, path, _, _, overrides in table.FAULTS]
    return [(name, path, task, {**table.QUICK, **{k: v for k, v in over.items() if k != "screen"}})
            for name, path, task, over in cases]  # fmt: skip


def exploit_check(url: str, left: Callable[[], float]) -> list[dict[str, Any]]:
    """Each exploit's status in-process (a session, as `cudasmith eval` judges) and through the server,
    while the budget lasts (those not reached are listed as such)."""
    from cudasmith import Client, EvalOptions, Judge

    client = Client(url)
    rows: list[dict[str, Any]] = []
    for name, path, task, options in exploit_cases():
        if left() <= 0:
            rows.append(
                {"exploit": name, "solution": path.name, "eval": "not reached", "server": "not reached"}
            )
            continue
        with Judge(task=task, options=EvalOptions(**options)) as judge:
            here = judge.judge(path).status.value
        request = {
            REQUEST_NAMES[k]: list(v) if isinstance(v, tuple) else v
            for k, v in options.items()
            if k in REQUEST_NAMES
        }
        served = client.judge(path, task=task, options=request, fresh=True).status.value
        rows.append({"exploit": name, "solution": path.name, "eval": here, "server": served})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", default=str(BATCH), help="a folder with EXPECTED.json, or 'nobuild'")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--baselines", default="eager", help="timed beside the candidates (default eager)")
    parser.add_argument(
        "--budget-s", type=float, default=2400.0, help="the whole run's budget (each approach half)"
    )
    parser.add_argument("--target", type=float, default=0.95, help="the least (b)/(a) that passes")
    parser.add_argument("--exploits", action=argparse.BooleanOptionalAction, default=None,
                        help="check the exploit suite through both (default: on a GPU)")  # fmt: skip
    parser.add_argument(
        "--server-flags", default="", help="more flags for `cudasmith serve`, e.g. '--build-workers 0'"
    )
    parser.add_argument("--out", type=Path, help="write the results here as JSON")
    args = parser.parse_args()
    exploits = args.exploits if args.exploits is not None else args.device.startswith("cuda")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="cudasmith-serve-bench-") as directory:
        workdir = Path(directory)
        candidates = load_candidates(args.candidates, workdir)
        facts = dict(os.environ, **fresh_caches(workdir / "facts"))
        subprocess.run([sys.executable, "-m", "cudasmith", "device", "--device", args.device, "--json"], env=facts,
                       capture_output=True, check=False)  # fmt: skip
        device_cache = Path(facts["CUDASMITH_CACHE"]) / "device"
        share = args.budget_s / 2
        os.environ.update(fresh_caches(workdir / "a", device_cache))
        import torch  # noqa: F401  (imported before (a)'s clock starts, as the server imports it before listening)

        first = in_process(candidates, args.device, tuple(args.baselines.split(",")),
                           lambda: started + share - time.monotonic())  # fmt: skip
        judged = [c for c in candidates if c.name in first.statuses]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (str(ROOT / "src"), os.environ.get("PYTHONPATH")))),
                   **fresh_caches(workdir / "b", device_cache))  # fmt: skip
        server = Served(args.device, args.baselines, env, workdir / "store.db", args.server_flags.split())
        try:
            second = through_server(judged, server.url, {"baselines": args.baselines.split(",")},
                                    lambda: started + args.budget_s - time.monotonic())  # fmt: skip
            rows = (
                exploit_check(server.url, lambda: started + args.budget_s - time.monotonic())
                if exploits
                else []
            )
        finally:
            server.close()
    return report(candidates, first, second, rows, args)


def report(candidates: list[Candidate], first: Approach, second: Approach, rows: list[dict[str, Any]],
           args: argparse.Namespace) -> int:  # fmt: skip
    """The table, the checks, the JSON; the exit code."""
    table = Table(
        title=f"the judge as a service vs in-process ({args.device}, "
        f"{'1 GPU' if args.device.startswith('cuda') else 'one CPU lane'}, baselines {args.baselines})"
    )
    for column in ("approach", "candidates", "wall s", "per GPU-minute", "(b)/(a)"):
        table.add_column(column, justify="left" if column == "approach" else "right")
    rates = [first.per_gpu_minute(), second.per_gpu_minute()]
    ratio = rates[1] / rates[0] if all(rates) else None  # type: ignore[operator]
    for approach, rate, shown in (
        (first, rates[0], ""),
        (second, rates[1], f"{ratio:.1%}" if ratio else "–"),
    ):
        table.add_row(approach.label, str(len(approach.statuses)), f"{approach.wall_s:.1f}",
                      f"{rate:.1f}" if rate else "–", shown)  # fmt: skip
    console.print(table)
    expected = {c.name: c.expected for c in candidates if c.expected}
    wrong = [(a.label, name, status, expected[name]) for a in (first, second) for name, status in a.statuses.items()
             if name in expected and status != expected[name]]  # fmt: skip
    for label, name, status, should in wrong:
        console.print(f"{label}: {name} got {status}, expected {should}")
    differ = [row for row in rows if row["eval"] != row["server"]]
    reached = [row for row in rows if row["eval"] != "not reached"]
    if rows:
        console.print(f"exploits: {len(reached) - len(differ)} of {len(rows)} get the same status through the "
                      f"server ({len(rows) - len(reached)} not reached within the budget)")  # fmt: skip
        for row in differ:
            console.print(
                f"  {row['exploit']} ({row['solution']}): eval {row['eval']}, server {row['server']}"
            )
    passed = ratio is not None and ratio >= args.target and not differ and not wrong
    console.print(f"(b)/(a) {'–' if ratio is None else f'{ratio:.1%}'} against a target of {args.target:.0%}: "
                  f"{'pass' if passed else 'FAIL'}")  # fmt: skip
    if args.out:
        results = {
            "approaches": [asdict(first), asdict(second)],
            "ratio": ratio,
            "exploits": rows,
            "wrong": wrong,
        }
        args.out.write_text(json.dumps(results, indent=2, default=str))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
