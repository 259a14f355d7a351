"""`--server URL`: candidates judged by a running `cudasmith serve` instead of in this process (`eval`'s and
`bench`'s), on the server's lanes (serve/lanes.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from cudasmith.commands.judging import JudgeFlags
from cudasmith.commands.options import LaneFlags
from cudasmith.errors import UsageError

if TYPE_CHECKING:
    from cudasmith.exec import LaneChoice
    from cudasmith.harness.verdict import Verdict
    from cudasmith.serve.lanes import ServerLanes
    from cudasmith.serve.models import JudgingOptions
    from cudasmith.store import Run

# Judging flags whose value is the server's own (its command line), never a request's.
SERVER_FLAGS = ("--device", "--seed", "--memory-limit", "--require-isolation", "--in-flight")


def request_options(judge: JudgeFlags) -> JudgingOptions:
    """The judging flags given, as a request's options (serve.models.JudgingOptions, whose fields bear the
    flags' names), checked (a UsageError names the flag of a bad value)."""
    from pydantic import ValidationError

    from cudasmith.serve.models import JudgingOptions

    given = {flag.removeprefix("--").replace("-", "_") for flag in judge.given()}
    options = {name: getattr(judge, name) for name in JudgingOptions.model_fields if name in given}
    if "baselines" in options:
        options["baselines"] = [name.strip() for name in options["baselines"].split(",") if name.strip()]
    try:
        return JudgingOptions.model_validate(options)
    except ValidationError as exc:
        error = exc.errors()[0]
        flag = "--" + str(error["loc"][0]).replace("_", "-")
        raise UsageError(f"{flag}: {error['msg'].lower()}") from None


def server_lanes(url: str, judge: JudgeFlags, lanes: LaneFlags | None = None) -> ServerLanes:
    """The server at `url` as a run's lanes, judging under the judging flags given; a UsageError for a flag
    that is the server's own (a judging flag of SERVER_FLAGS, or any of `lanes`)."""
    from cudasmith.serve.lanes import ServerLanes

    _refuse_servers_own(
        [flag for flag in judge.given() if flag in SERVER_FLAGS] + (lanes.given() if lanes else [])
    )
    return ServerLanes(url, request_options(judge))


def resumed_lanes(run: Run, url: str | None, lanes: LaneFlags) -> LaneChoice:
    """Where a resumed run goes on: on the server that judged it (at `url` where it moved), else on `lanes`;
    a UsageError for a server's own flag, or for a server named for a run judged here."""
    from cudasmith.serve.lanes import ServerLanes
    from cudasmith.serve.models import JudgingOptions

    stored = run.options.get("server")
    if stored is None:
        if url is not None:
            raise UsageError(f"run {run.id} was judged here, not by a server: drop --server")
        return lanes.lanes()
    _refuse_servers_own(lanes.given())
    return ServerLanes(url or stored, JudgingOptions.model_validate(run.options.get("request") or {}))


def _refuse_servers_own(flags: list[str]) -> None:
    if flags:
        raise UsageError(f"{', '.join(flags)}: the server's own with --server (set when it starts); drop it")


def judged_on_server(
    url: str,
    files: list[Path],
    task: str | None,
    problem: Path | None,
    from_dir: Path | None,
    judge: JudgeFlags,
) -> Iterator[Verdict]:
    """The files' verdicts from the server at `url` (its token in $CUDASMITH_TOKEN), in the order given."""
    from cudasmith.exec.jobs import Job, ProblemRef
    from cudasmith.tasks.lookup import find_problem_file

    if from_dir is not None:
        raise UsageError(
            "--from names problems of this machine: with --server give --task NAME or --problem FILE"
        )
    lanes = server_lanes(url, judge)
    reference = ProblemRef.from_file(*find_problem_file(task, problem))
    options = lanes.options()
    with lanes.make(options.device) as executor:
        futures = [
            executor.submit(
                Job(str(i), reference, options, file.read_text(errors="replace"), file.name, str(file))
            )
            for i, file in enumerate(files)
        ]
        for future in futures:
            yield future.result()
