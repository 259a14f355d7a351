"""A running `cudasmith serve` as a run's lanes: what `eval --server` and `bench --server` judge on.

Its candidates are an executor's jobs (exec/base.py) whose one lane is the server: SERVER_IN_FLIGHT of them
are at the server at once, each waited for by a thread of its own (the client keeps a connection per
thread). The server judges under its own options and those the request sets; its /v1/health says which,
with its device and its judge, so that a run that keeps the verdicts (a bench) keys them as the server does.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

from pydantic import ValidationError

from cudasmith.errors import CudasmithError
from cudasmith.exec.base import Executor
from cudasmith.exec.jobs import Job, ProblemRef
from cudasmith.harness.options import EvalOptions
from cudasmith.harness.verdict import Verdict
from cudasmith.jsontypes import JsonDict
from cudasmith.serve.client import Client
from cudasmith.serve.models import Health, JudgingOptions
from cudasmith.tasks.problem import SUITE_DIR

# Candidates a client keeps at a server at once: as many as a large server judges at once (8 GPUs, 8 in
# flight on each), so that its lanes never wait for this client; more would only wait in its queue.
SERVER_IN_FLIGHT = 64


def built_in_task(problem: ProblemRef) -> str | None:
    """The problem's name where it is a built-in task's file (a request names it: the server judges its own
    copy), else None (a request carries its source)."""
    path = Path(problem.path).resolve()
    return problem.name if path == (SUITE_DIR / f"{problem.name}.py").resolve() else None


class ServerBackend:
    """The server as an executor's lane: a job is submitted with the request's options, then waited for."""

    def __init__(self, client: Client, request: JudgingOptions) -> None:
        self.name = client.url
        self.client = client
        self.options = request.model_dump(exclude_none=True)

    def judge(self, job: Job) -> Verdict:
        task = built_in_task(job.problem)
        problem = None if task is not None else job.problem.source
        verdict = self.client.judge(job.source, task, problem, self.options, name=job.file_name)
        # The server names a problem sent as source by its hash; the verdict says the name it has here.
        verdict.task = job.problem.name
        return verdict

    def counters(self) -> dict[str, int]:
        """The server's sessions are its own: none are this client's."""
        return {"sessions": 0, "restarts": 0}

    def close_idle(self, idle_s: float) -> int:
        return 0

    def close(self) -> None:
        """Nothing: what this client left queued is judged by the server all the same."""


class ServerExecutor(Executor):
    """Jobs judged by a running server (ServerBackend), SERVER_IN_FLIGHT at once."""

    kind = "server"

    def __init__(self, client: Client, request: JudgingOptions) -> None:
        super().__init__([ServerBackend(client, request)], in_flight=SERVER_IN_FLIGHT)


@dataclass(frozen=True)
class ServerLanes:
    """The server at `url` as a run's lanes (an exec.LaneChoice), judging under the options `request` sets
    and its own (its token in $CUDASMITH_TOKEN)."""

    url: str
    request: JudgingOptions

    @cached_property
    def client(self) -> Client:
        return Client(self.url)

    @cached_property
    def health(self) -> Health:
        """The server's /v1/health, asked once."""
        answer = self.client.health()
        try:
            return Health.model_validate(answer)
        except ValidationError:
            raise CudasmithError(
                f"{self.url} runs cudasmith {answer.get('version')}, whose /v1/health does not say how it "
                "judges: update it"
            ) from None

    def options(self) -> EvalOptions:
        """The options the server judges under for this request: its own, overridden by the request's."""
        own = EvalOptions.from_stored(self.health.judging, None)
        # Checked as the server checks them, but for isolation: that is the server's, checked where it judges.
        options = self.request.applied(replace(own, require_isolation=False))
        return replace(options, require_isolation=own.require_isolation)

    def check(self, device: str) -> None:
        """Nothing to check here: the server checked its lanes as it started."""

    def make(self, device: str, in_flight: int | None = None) -> Executor:
        """The server's executor (its own lanes decide how many candidates each GPU judges at once)."""
        return ServerExecutor(self.client, self.request)

    def device_name(self, device: str) -> str:
        return self.health.device_name

    def judge_version(self) -> str:
        return self.health.judge

    def run_options(self) -> JsonDict:
        """The server's URL and the request's options: a resumed run goes on there."""
        return {"server": self.url, "request": self.request.model_dump(exclude_none=True)}
