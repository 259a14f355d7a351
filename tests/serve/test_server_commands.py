"""`eval --server` and `bench --server` as a user runs them, against a `cudasmith serve` on 127.0.0.1 judging
on the CPU, whose memory reads 10 MB/s (so that a config's estimated check time is fixed): a request's config
time limit skips what the same limit skips here, and a bench judged there gives the verdicts of one judged
here, in a run of this machine's store keyed as the server keys it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cudasmith.serve.client import Client
from cudasmith.store import RunStore
from cudasmith.store.runs import load_run

from conftest import PROBLEMS, SOLUTIONS, run_cli, slow_memory
from served import Server
from solution_folders import fake_kernelbench, solution

# Two configs, 12 KB and 1.2 MB in and out: at 10 MB/s their checks are estimated at about 2 s and 3 min.
PROBLEM = PROBLEMS / "add_two_sizes.py"
QUICK = ("--no-timing", "--seeds", "1")
# A KernelBench run over the fake checkout's problems (sent to the server as source): file → solution.
KERNELS = {
    "level_1_problem_19_sample_0_kernel.py": "honest_relu.py",
    "level_1_problem_19_sample_1_kernel.py": "mutate_in_place.py",
    "level_1_problem_2_sample_0_kernel.py": "vector_add_cpu.py",
    "level_1_problem_2_sample_1_kernel.py": "torch_operator.py",
}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return slow_memory(tmp_path_factory.mktemp("slow-memory"))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> Iterator[Server]:
    with Server(tmp_path_factory.mktemp("served") / "store.db", env=env) as running:
        yield running


def verdict_of(*args: str, env: dict[str, str]) -> dict[str, object]:
    """What `cudasmith eval ARGS --json` prints for one solution, run in `env`."""
    done = subprocess.run(
        [sys.executable, "-m", "cudasmith", "eval", *args, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    verdict: dict[str, object] = json.loads(done.stdout)
    return verdict


@pytest.mark.slow
def test_eval_with_server_passes_the_config_time_limit(server: Server, env: dict[str, str]) -> None:
    solution_file = str(SOLUTIONS / "vector_add_cpu.py")
    on_server = ("--problem", str(PROBLEM), "--server", server.url, *QUICK)
    limited = verdict_of(solution_file, *on_server, "--config-time-limit", "60", env=env)
    here = verdict_of(solution_file, "--problem", str(PROBLEM), "--device", "cpu", *QUICK,
                      "--config-time-limit", "60", env=env)  # fmt: skip
    assert limited["status"] == here["status"] == "correct"
    assert limited["skipped_configs"] == here["skipped_configs"], "skipped as eval skips it here"
    [skipped] = limited["skipped_configs"]  # type: ignore[misc]
    assert skipped["config"] == {"n": 100_000} and "too large for this device" in skipped["reason"]
    assert limited["task"] == PROBLEM.stem, "named as here, not by the hash the server keeps it under"
    # Without the flag the server's own limit (600 s) holds: another session, whose verdict checks both.
    unlimited = verdict_of(solution_file, *on_server, env=env)
    assert unlimited["skipped_configs"] == [] and len(unlimited["configs"]) == 2  # type: ignore[arg-type]


def bench(folder: Path, checkout: Path, store: Path, *args: str) -> tuple[dict[str, object], RunStore]:
    """`cudasmith bench FOLDER --from CHECKOUT --json ARGS` into `store`: its numbers, and the store."""
    done = run_cli(
        "bench", str(folder), "--from", str(checkout), "--store", str(store), "--json", *QUICK, *args
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), RunStore(store)


@pytest.mark.slow
def test_bench_with_server_gives_the_verdicts_of_a_bench_here(server: Server, tmp_path: Path) -> None:
    checkout = fake_kernelbench(tmp_path / "checkout")
    folder = tmp_path / "runs" / "level1_run"
    folder.mkdir(parents=True)
    for name, source in KERNELS.items():
        shutil.copy(solution(source), folder / name)
    there, served = bench(folder, checkout, tmp_path / "served.db", "--server", server.url)
    here, local = bench(folder, checkout, tmp_path / "local.db", "--device", "cpu")
    with served, local:
        runs = {name: load_run(store, str(numbers["run"])) for name, numbers, store in
                (("there", there, served), ("here", here, local))}  # fmt: skip
        statuses = {
            name: {(a.task, a.sample): a.status for a in view.attempts} for name, view in runs.items()
        }
        assert (
            statuses["there"]
            == statuses["here"]
            == {
                ("kernelbench/level1/19_ReLU", 0): "correct",
                ("kernelbench/level1/19_ReLU", 1): "rejected",
                ("kernelbench/level1/2_Add", 0): "correct",
                ("kernelbench/level1/2_Add", 1): "rejected",
            }
        )
        assert there["rejudge"] == here["rejudge"] and there["counts"] == here["counts"]
        run = runs["there"].run
        health = Client(server.url).health()
        assert run.options.get("server") == server.url and run.options.get("request") == {
            "seeds": 1,
            "timing": False,
        }
        assert (run.device_name, run.harness_version) == (health["device_name"], health["judge"])
        tasks = {c.verdict.task for c in served.candidates(run.id) if c.verdict is not None}
        assert tasks == {"kernelbench/level1/19_ReLU", "kernelbench/level1/2_Add"}, "named as here"
    executor: dict[str, Any] = there["executor"]  # type: ignore[assignment]
    assert executor["kind"] == "server" and executor["lanes"][0]["judged"] == len(KERNELS)


def test_a_server_whose_fastapi_cannot_import_names_what_is_missing(tmp_path: Path) -> None:
    # The GPU machine had FastAPI but not a package it needs (opentelemetry-api): "needs FastAPI" alone sent
    # the user to what was already there.
    shadow = tmp_path / "shadow" / "fastapi"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("import cudasmith_test_missing_dependency\n")
    env = {**os.environ, "PYTHONPATH": str(shadow.parent)}
    done = subprocess.run(
        [sys.executable, "-m", "cudasmith", "serve", "--device", "cpu", "--store", str(tmp_path / "s.db")],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert "cudasmith_test_missing_dependency" in done.stderr
    assert "Traceback" not in done.stderr
