"""A client of `cudasmith serve`, in the standard library only (a trainer's process needs neither FastAPI
nor torch to use it):

    client = cudasmith.Client("http://127.0.0.1:8765")            # token: argument, or $CUDASMITH_TOKEN
    verdict = client.judge(source, task="level1/softmax")          # a Verdict, as cudasmith.evaluate gives
    ids = client.submit_many(sources, task="level1/softmax", options={"time_limit": 5})
    verdicts = [client.result(id) for id in ids]

A candidate is its source text or its file (a `Path`, or a one-line string naming a file), as for
`Judge.submit`. One connection per thread is kept open; a full queue (429) is waited out, as long as the
server's Retry-After says, within the client's timeout.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cudasmith.errors import CudasmithError
from cudasmith.harness.stream import solution_file
from cudasmith.harness.verdict import Verdict
from cudasmith.jsontypes import JsonDict, JsonObject
from cudasmith.serve.protocol import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    HEALTH,
    MAX_BATCH,
    MAX_WAIT_S,
    METRICS,
    TOKEN_ENV,
    VERDICTS,
    State,
)

# How long a request may take beyond the wait it asks the server for.
REQUEST_SLACK_S = 30.0
# The longest a client waits for a verdict (or for room in a full queue), unless told otherwise.
TIMEOUT_S = 3600.0


class ServerError(CudasmithError):
    """What the server refused or could not do, with its HTTP status (0: no answer at all) and, for a full
    queue, the seconds it asked to wait."""

    def __init__(self, status: int, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class Submission:
    """A submission as the server has it: its state, and once done its verdict (with `cached` when it was
    an earlier identical submission's) and reward; `error` says why a failed one has none."""

    id: int
    state: State
    task: str
    cached: bool = False
    verdict: Verdict | None = None
    reward: float | None = None
    error: str | None = None

    @classmethod
    def from_dict(cls, data: JsonObject) -> Submission:
        """From the server's JSON."""
        verdict = data.get("verdict")
        return cls(
            id=int(data["id"]),
            state=State(data["state"]),
            task=str(data.get("task", "")),
            cached=bool(data.get("cached")),
            verdict=None if verdict is None else Verdict.from_dict(verdict),
            reward=data.get("reward"),
            error=data.get("error"),
        )


def _candidate(code: str | Path, name: str | None = None) -> JsonDict:
    """A candidate as a request carries it: its source, and what its verdict calls it (`name`, else its
    file's name; the server's default when given as text)."""
    path = solution_file(code)
    source = str(code) if path is None else path.read_text(errors="replace")
    name = name or (None if path is None else path.name)
    return {"source": source, **({"name": name} if name else {})}


def _problem(problem: str | Path) -> str:
    """A problem's source: a problem file's (a Path, or a one-line string naming it), or the text itself."""
    if isinstance(problem, Path) or "\n" not in problem:
        return Path(problem).read_text()
    return problem


class Client:
    """Talks to a `cudasmith serve` at `url`; `token`: its bearer token (default $CUDASMITH_TOKEN, none on
    a loopback server without one); `timeout_s`: the longest a call waits for a verdict or for room."""

    def __init__(
        self,
        url: str = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}",
        token: str | None = None,
        timeout_s: float = TIMEOUT_S,
    ) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise CudasmithError(f"a server's URL looks like http://HOST:PORT, not {url!r}")
        self.url = url.rstrip("/")
        self._parts = parts
        self._prefix = parts.path.rstrip("/")
        self.token = token if token is not None else os.environ.get(TOKEN_ENV)
        self.timeout_s = timeout_s
        self._local = threading.local()

    # -- candidates --------------------------------------------------------------------------------

    def submit(
        self,
        code: str | Path,
        task: str | None = None,
        problem: str | Path | None = None,
        options: JsonDict | None = None,
        fresh: bool = False,
        name: str | None = None,
    ) -> int:
        """Queue one candidate for a built-in `task` (or a `problem` file or source); its id. `name`: what
        its verdict calls it (default: its file's name)."""
        return self._submit([_candidate(code, name)], task, problem, options, fresh)[0]

    def submit_many(
        self,
        codes: Iterable[str | Path],
        task: str | None = None,
        problem: str | Path | None = None,
        options: JsonDict | None = None,
        fresh: bool = False,
    ) -> list[int]:
        """Queue candidates of one task (MAX_BATCH to a request); their ids, in order. `options`: the
        judging options a request may set (seeds, timing, time_limit, rules, baselines, …)."""
        return self._submit([_candidate(code) for code in codes], task, problem, options, fresh)

    def _submit(
        self,
        candidates: list[JsonDict],
        task: str | None,
        problem: str | Path | None,
        options: JsonDict | None,
        fresh: bool,
    ) -> list[int]:
        common: JsonDict = {"options": options or {}, "fresh": fresh}
        if task is not None:
            common["task"] = task
        if problem is not None:
            common["problem"] = _problem(problem)
        batch = [{**candidate, **common} for candidate in candidates]
        ids: list[int] = []
        for start in range(0, len(batch), MAX_BATCH):
            ids += self._post_waiting(VERDICTS, {"candidates": batch[start : start + MAX_BATCH]})["ids"]
        return ids

    def status(self, id: int, wait_s: float = 0.0) -> Submission:
        """Where submission `id` stands; waits up to `wait_s` seconds (at most MAX_WAIT_S) for it to finish."""
        wait_s = min(max(wait_s, 0.0), MAX_WAIT_S)
        query = f"?wait={wait_s:g}" if wait_s > 0 else ""
        return Submission.from_dict(self._request("GET", f"{VERDICTS}/{id}{query}", wait_s=wait_s))

    def result(self, id: int, timeout_s: float | None = None) -> Verdict:
        """Submission `id`'s verdict, waited for (a ServerError when the judge failed or time ran out)."""
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        while True:
            left = deadline - time.monotonic()
            submission = self.status(id, wait_s=max(0.0, left))
            if submission.state is State.DONE and submission.verdict is not None:
                return submission.verdict
            if submission.state is State.FAILED:
                raise ServerError(500, f"submission {id}: {submission.error}")
            if left <= 0:
                raise ServerError(0, f"submission {id} is still {submission.state} after the timeout")

    def judge(
        self,
        code: str | Path,
        task: str | None = None,
        problem: str | Path | None = None,
        options: JsonDict | None = None,
        fresh: bool = False,
        name: str | None = None,
    ) -> Verdict:
        """Judge one candidate and return its verdict."""
        return self.result(self.submit(code, task, problem, options, fresh, name))

    def judge_many(
        self,
        codes: Iterable[str | Path],
        task: str | None = None,
        problem: str | Path | None = None,
        options: JsonDict | None = None,
        fresh: bool = False,
    ) -> list[Verdict]:
        """Judge candidates of one task (all queued at once) and return their verdicts, in order."""
        return [self.result(id) for id in self.submit_many(codes, task, problem, options, fresh)]

    # -- the server --------------------------------------------------------------------------------

    def health(self) -> JsonObject:
        """The server's /v1/health: version, device, judge, judging options, executor, lanes."""
        return dict(self._request("GET", HEALTH))

    def metrics(self) -> JsonObject:
        """The server's /v1/metrics: queue depth, in flight, verdicts a minute, GPU busy."""
        return dict(self._request("GET", METRICS))

    # -- HTTP --------------------------------------------------------------------------------------

    def _post_waiting(self, path: str, body: JsonDict) -> Any:
        """POST, waiting out a full queue as the server asks, within the timeout."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                return self._request("POST", path, body)
            except ServerError as error:
                if error.status != 429 or time.monotonic() + (error.retry_after_s or 1) > deadline:
                    raise
                time.sleep(error.retry_after_s or 1)

    def _connection(self) -> http.client.HTTPConnection:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            kind = (
                http.client.HTTPSConnection if self._parts.scheme == "https" else http.client.HTTPConnection
            )
            connection = kind(self._parts.hostname or "", self._parts.port)
            self._local.connection = connection
        return connection

    def _request(self, method: str, path: str, body: JsonDict | None = None, wait_s: float = 0.0) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        for attempt in (1, 2):  # a kept connection the server closed meanwhile is opened again, once
            connection = self._connection()
            connection.timeout = wait_s + REQUEST_SLACK_S
            if connection.sock is not None:  # a kept connection: its socket has the last request's timeout
                connection.sock.settimeout(connection.timeout)
            try:
                connection.request(method, self._prefix + path, body=data, headers=headers)
                response = connection.getresponse()
                payload = response.read()
                break
            except (OSError, http.client.HTTPException) as exc:
                connection.close()
                self._local.connection = None
                if attempt == 2:
                    raise ServerError(0, f"no answer from {self.url}: {exc}") from None
        try:
            answer = json.loads(payload) if payload else {}
        except ValueError:
            answer = {"error": payload[:200].decode(errors="replace")}
        if response.status >= 400:
            retry = response.getheader("Retry-After")
            message = answer.get("error") if isinstance(answer, dict) else None
            raise ServerError(
                response.status,
                f"{self.url}: {response.status} {message or response.reason}",
                float(retry) if retry and retry.isdigit() else None,
            )
        return answer
