"""`eval --server URL`: the solutions judged by a running `cudasmith serve` instead of in this process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cudasmith.commands.judging import JudgeFlags
from cudasmith.errors import UsageError
from cudasmith.harness.verdict import Verdict

# Judging flags whose value is the server's own (its command line), never a request's.
SERVER_FLAGS = ("--device", "--seed", "--memory-limit", "--require-isolation", "--in-flight")


def request_options(judge: JudgeFlags) -> dict[str, Any]:
    """The judging flags given, as a request's options (the fields of serve.models.JudgingOptions, which
    bear the flags' names); a UsageError for a flag that is the server's to set."""
    from cudasmith.serve.models import JudgingOptions

    theirs = [flag for flag in judge.given() if flag in SERVER_FLAGS]
    if theirs:
        raise UsageError(f"{', '.join(theirs)}: the server's own with --server (set when it starts); drop it")
    given = {flag.removeprefix("--").replace("-", "_") for flag in judge.given()}
    options: dict[str, Any] = {
        name: getattr(judge, name) for name in JudgingOptions.model_fields if name in given
    }
    if "baselines" in options:
        options["baselines"] = [name.strip() for name in options["baselines"].split(",") if name.strip()]
    return options


def judged_on_server(
    url: str,
    files: list[Path],
    task: str | None,
    problem: Path | None,
    from_dir: Path | None,
    judge: JudgeFlags,
) -> Iterator[Verdict]:
    """The files' verdicts from the server at `url` (its token in $CUDASMITH_TOKEN), in the order given; all
    are queued at once."""
    from cudasmith.serve.client import Client

    if from_dir is not None:
        raise UsageError(
            "--from names problems of this machine: with --server give --task NAME or --problem FILE"
        )
    if (task is None) == (problem is None):
        raise UsageError("give exactly one of a task name (--task) or a problem file (--problem)")
    options = request_options(judge)
    client = Client(url)
    ids = client.submit_many(files, task=task, problem=problem, options=options)
    for id in ids:
        yield client.result(id)
