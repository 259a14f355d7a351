"""`--server URL`'s flags, before any server is asked: every judging flag is a request's option or the
server's own, none dropped; a flag spelt out at its default is sent (the server's default may differ); the
server's own flags, its lanes' and a model's bench are refused in one line, naming them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import typer
from typer.testing import CliRunner

from cudasmith.cli import app
from cudasmith.commands.judging import JudgeFlags, judging
from cudasmith.commands.remote import SERVER_FLAGS, request_options
from cudasmith.errors import UsageError
from cudasmith.serve.models import JudgingOptions
from cudasmith.store import RunStore
from cudasmith.store.start import new_run

from conftest import SOLUTIONS

# Nothing listens here: a command that asks it says so; one refused first never does.
NOWHERE = "http://127.0.0.1:9"


def invoke(*args: str) -> tuple[int, str]:
    """Exit code and stderr of `cudasmith ARGS`, in this process."""
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.stderr


def test_every_judging_flag_is_a_requests_option_or_the_servers_own() -> None:
    flags = {"--" + field.name.replace("_", "-") for field in dataclasses.fields(JudgeFlags)}
    requested = {"--" + name.replace("_", "-") for name in JudgingOptions.model_fields}
    assert requested <= flags, "a request's options are named as the flags"
    assert flags == requested | set(SERVER_FLAGS), "a flag that is neither would be dropped"


def test_the_flags_given_become_the_requests_options_a_default_spelt_out_included() -> None:
    sent: list[JudgingOptions] = []
    probe = typer.Typer()

    @probe.command()
    @judging
    def judge_probe(*, judge: JudgeFlags) -> None:
        sent.append(request_options(judge))

    runner = CliRunner()
    args = [
        "--rules",
        "strict",
        "--timing",
        "--seeds",
        "2",
        "--config-time-limit",
        "30",
        "--baselines",
        "expert",
    ]
    assert runner.invoke(probe, args).exit_code == 0
    assert runner.invoke(probe, []).exit_code == 0
    assert sent == [
        JudgingOptions(rules="strict", timing=True, seeds=2, config_time_limit=30.0, baselines=["expert"]),
        JudgingOptions(),
    ]
    refused = runner.invoke(probe, ["--config-time-limit", "0"])
    assert isinstance(refused.exception, UsageError)
    assert str(refused.exception) == "--config-time-limit: input should be greater than 0"


def test_the_servers_own_flags_are_refused_before_it_is_asked(tmp_path: Path) -> None:
    solution = str(SOLUTIONS / "vector_add_cpu.py")
    theirs = "the server's own with --server (set when it starts); drop it"
    code, err = invoke("eval", solution, "--task", "level1/vector_add", "--server", NOWHERE, "--seed", "3")
    assert code == 2 and err.strip() == f"error: --seed: {theirs}"
    store = str(tmp_path / "runs.db")
    code, err = invoke(
        "bench", str(tmp_path), "--server", NOWHERE, "--device", "cpu", "--gpus", "2", "--store", store
    )
    assert code == 2 and err.strip() == f"error: --device, --gpus: {theirs}"
    code, err = invoke(
        "bench", "--model", "openai:fake", "--level", "level1", "--server", NOWHERE, "--store", store
    )
    assert code == 2 and "--server judges a folder's kernels, not a model's (--model)" in err
    assert len(err.strip().splitlines()) == 1
    code, err = invoke("bench", str(tmp_path), "--server", NOWHERE, "--store", store)
    assert code == 2 and f"no answer from {NOWHERE}" in err, "asked only once nothing is refused"
    assert list(tmp_path.iterdir()) == [], "nothing stored"


def test_a_run_judged_here_goes_on_here(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store:
        run = store.create_run(new_run("bench", "level1/vector_add", "v", "cpu", None, strategy="folder"))
    code, err = invoke("bench", "--resume", run.id, "--server", NOWHERE, "--store", str(tmp_path / "runs.db"))
    assert code == 2 and f"run {run.id} was judged here, not by a server: drop --server" in err
