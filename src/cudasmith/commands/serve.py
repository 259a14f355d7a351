"""`cudasmith serve`: the judge as an HTTP service, for RL trainers and search frameworks."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from cudasmith.commands.judging import JudgeFlags, judging
from cudasmith.commands.options import LaneFlags, StoreOption, in_lanes, value_option
from cudasmith.commands.store import store_path
from cudasmith.errors import UsageError
from cudasmith.serve.protocol import DEFAULT_HOST, DEFAULT_PORT, IDLE_S, MAX_QUEUE, MAX_SOURCE_BYTES

SERVER = "Server"

HostOption = Annotated[
    str,
    typer.Option(
        "--host",
        metavar="ADDRESS",
        help="Address to listen on; any but the loopback needs --token-file.",
        rich_help_panel=SERVER,
    ),
]
PortOption = Annotated[
    int,
    typer.Option("--port", metavar="PORT", help="Port to listen on (0: a free one).", rich_help_panel=SERVER),
]
TokenFileOption = Annotated[
    Path | None,
    value_option(
        "--token-file",
        metavar="FILE",
        help="The bearer token clients must send (made, mode 0600, when FILE does not exist) "
        "\\[default: none on the loopback]",
        panel=SERVER,
    ),
]
MaxQueueOption = Annotated[
    int,
    typer.Option(
        "--max-queue",
        metavar="COUNT",
        help="Submissions that may wait; more get 429.",
        rich_help_panel=SERVER,
    ),
]
IdleOption = Annotated[
    float,
    typer.Option(
        "--idle",
        metavar="SECONDS",
        help="Close a judge session that judged nothing for this long.",
        rich_help_panel=SERVER,
    ),
]
MaxSourceOption = Annotated[
    int,
    typer.Option(
        "--max-source",
        metavar="BYTES",
        help="Largest solution (or problem) source accepted; larger gets 413.",
        rich_help_panel=SERVER,
    ),
]
TasksOnlyOption = Annotated[
    bool,
    typer.Option(
        "--tasks-only",
        help="Judge built-in tasks only: refuse problems sent as source (their reference runs in the judge's "
        "own workers).",
        rich_help_panel=SERVER,
    ),
]


@judging
@in_lanes
def serve_command(
    host: HostOption = DEFAULT_HOST,
    port: PortOption = DEFAULT_PORT,
    token_file: TokenFileOption = None,
    store: StoreOption = None,
    max_queue: MaxQueueOption = MAX_QUEUE,
    idle: IdleOption = IDLE_S,
    max_source: MaxSourceOption = MAX_SOURCE_BYTES,
    tasks_only: TasksOnlyOption = False,
    *,
    judge: JudgeFlags,
    lane_flags: LaneFlags,
) -> None:
    """Judge candidates sent over HTTP: POST /v1/verdicts, GET /v1/verdicts/ID, /v1/health, /v1/metrics,
    and the OpenAPI page at /docs.

    One judge session per task and options on every GPU (--gpus, --executor ray), K candidates in flight
    each; every submission and verdict is in the run store (--store) before a client hears of it, so a
    server killed and started again judges what was left and serves what was done. A resubmitted candidate
    (same code, task and options) gets its stored verdict unless the request says "fresh". The judging
    flags set the defaults a request's options override; the device, in flight, memory limit and isolation
    are the server's alone. Stop it with Ctrl-C: what is queued is judged at the next start.

    Example: [bold]cudasmith serve --device cpu[/], then
    [bold]curl -s localhost:8765/v1/verdicts -d '{"task": "level1/vector_add", "source": "…"}'[/]
    """
    from cudasmith.serve.access import server_token

    token, made = server_token(host, token_file)  # refused before anything starts
    if max_queue < 1 or max_source < 1 or not idle > 0:
        raise UsageError("--max-queue, --max-source and --idle must be positive")
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as missing:
        # What is missing, by name: on a machine with FastAPI but not a package FastAPI needs, "needs FastAPI"
        # alone sends the user to what is already there.
        raise UsageError(
            f"cudasmith serve needs FastAPI and uvicorn ({missing}): pip install 'cudasmith[serve]'"
        ) from None
    from cudasmith.serve.server import run_server
    from cudasmith.serve.service import JudgeService, ServeSettings
    from cudasmith.store import RunStore

    options = judge.options()
    lanes = lane_flags.lanes()
    lanes.check(options.device)
    settings = ServeSettings(options, max_queue, max_source, idle, accept_problems=not tasks_only)
    with (
        RunStore(store_path(store)) as runs,
        JudgeService(runs, lanes.make(options.device, options.in_flight), settings) as service,
    ):

        def listening(url: str) -> None:  # the line a script waits for comes last
            if made:
                print(f"a bearer token was written to {token_file} (mode 0600)", flush=True)
            if service.recovered:
                print(
                    f"judging {service.recovered} submissions left unjudged by an earlier server", flush=True
                )
            print(f"the API: {url}/docs", file=sys.stderr, flush=True)
            lanes_named = ", ".join(backend.name for backend in service.executor.backends)
            print(f"cudasmith serve: listening on {url} (lanes {lanes_named}; store {runs.path})", flush=True)

        run_server(service, host, port, token, listening)
