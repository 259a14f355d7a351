"""`cudasmith serve` as a user runs it, on 127.0.0.1, judging on the CPU: eight clients at once, a kill -9
in the middle of the queue, every bad input with its status while the queue goes on, and the token."""

from __future__ import annotations

import http.client
import json
import os
import stat
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from cudasmith.serve.client import Client, ServerError
from cudasmith.store import RunStore

from conftest import SOLUTIONS, run_cli
from served import PROBLEM, QUICK, Server

FAST = (SOLUTIONS / "optimize" / "add_fast.py").read_text()
WRONG = (SOLUTIONS / "optimize" / "add_wrong.py").read_text()
HANGS = (SOLUTIONS / "loops_forever.py").read_text()
# Eleven different codes, each with the verdict it must get.
DISTINCT = [
    *[(f"# variant {k}\n{FAST}", "correct") for k in range(5)],
    *[(f"# variant {k}\n{WRONG}", "incorrect") for k in range(2)],
    ((SOLUTIONS / "raises_in_forward.py").read_text(), "runtime_error"),
    ((SOLUTIONS / "segfaults.py").read_text(), "runtime_error"),
    (HANGS, "timeout"),
    ((SOLUTIONS / "python_syntax_error.py").read_text(), "compile_error"),
]
CANDIDATES = [DISTINCT[i % len(DISTINCT)] for i in range(60)]
CLIENTS = 8


def request(
    url: str, method: str, path: str, body: bytes | None = None, token: str | None = None
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """One raw request: status, JSON answer, headers."""
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    answer = json.loads(response.read() or b"{}")
    connection.close()
    return response.status, answer, dict(response.getheaders())


def post(url: str, body: Any) -> tuple[int, dict[str, Any], dict[str, str]]:
    return request(url, "POST", "/v1/verdicts", json.dumps(body).encode())


@pytest.mark.slow
def test_eight_clients_sixty_candidates_and_a_kill_9_mid_queue_lose_nothing_and_judge_nothing_twice(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store.db"
    ids: list[int | None] = [None] * len(CANDIDATES)
    server = Server(store, "--in-flight", "2")
    try:

        def submit_share(client_index: int) -> None:
            client = Client(server.url)
            for position in range(client_index, len(CANDIDATES), CLIENTS):
                ids[position] = client.submit(CANDIDATES[position][0], problem=PROBLEM, options=QUICK)

        threads = [threading.Thread(target=submit_share, args=(k,)) for k in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert all(id is not None for id in ids) and len(set(ids)) == len(CANDIDATES)
        # Mid-queue: once the first verdicts are in, and well before the last (eleven codes to judge).
        client = Client(server.url)
        while client.metrics()["judged"] < 2:
            time.sleep(0.2)
        server.kill()
    finally:
        server.stop()

    with RunStore(store) as runs:
        stored = [c for run in runs.runs(kind="serve") for c in runs.candidates(run.id)]
        assert len(stored) == len(CANDIDATES), "every submission was stored before its id was given"
        left = sum(c.verdict is None for c in stored)
    assert left > 0, "killed mid-queue"

    with Server(store, "--in-flight", "2") as again:
        assert f"judging {left} submissions left unjudged" in again.said()
        client = Client(again.url)
        served = [client.status(id, wait_s=0) for id in ids if id is not None]
        verdicts = [client.result(id, timeout_s=600) for id in ids if id is not None]
        assert [v.status.value for v in verdicts] == [expected for _, expected in CANDIDATES]
        assert any(s.state.value == "done" for s in served), "finished ones are served from the store"
        metrics = client.metrics()

    with RunStore(store) as runs:
        rows = runs._rows("SELECT code_hash, COUNT(*) AS n FROM verdicts GROUP BY code_hash")
        candidates = [c for run in runs.runs(kind="serve") for c in runs.candidates(run.id)]
    assert len(rows) == len(DISTINCT) and all(row["n"] == 1 for row in rows), "no code judged twice"
    assert sum(c.verdict_cached for c in candidates) == len(CANDIDATES) - len(DISTINCT), "duplicates reuse"
    assert metrics["queue_depth"] == 0 and metrics["in_flight"] == 0


@pytest.mark.slow
def test_bad_input_gets_its_status_and_the_queue_finishes(tmp_path: Path) -> None:
    with Server(tmp_path / "store.db", "--max-queue", "3", "--max-source", "20000") as server:
        hanging = [{"source": f"# hang {k}\n{HANGS}", "problem": PROBLEM, "options": QUICK} for k in range(2)]
        good = {"source": FAST, "problem": PROBLEM, "options": QUICK}
        status, answer, _ = post(server.url, {"candidates": [*hanging, good]})
        assert status == 202 and len(answer["ids"]) == 3
        queued = answer["ids"]

        status, answer, headers = post(server.url, good)
        assert status == 429 and "queue is full" in answer["error"] and int(headers["retry-after"]) >= 1
        bad_json = request(server.url, "POST", "/v1/verdicts", b'{"source": ')
        assert bad_json[0] == 422 and "not JSON" in bad_json[1]["error"]
        missing = post(server.url, {"task": "level1/vector_add"})
        assert missing[0] == 422 and missing[1]["error"].startswith("source:")
        unknown_field = post(server.url, {**good, "priority": 1})
        assert unknown_field[0] == 422 and "priority" in unknown_field[1]["error"]
        unknown_task = post(server.url, {"source": FAST, "task": "level1/vectoradd"})
        assert unknown_task[0] == 404 and "did you mean level1/vector_add" in unknown_task[1]["error"]
        too_large = post(server.url, {**good, "source": "#" * 20001})
        assert too_large[0] == 413
        assert request(server.url, "GET", "/v1/verdicts/999999")[0] == 404

        client = Client(server.url)
        assert [client.result(id, timeout_s=300).status.value for id in queued] == [
            "timeout",
            "timeout",
            "correct",
        ]
        broken = client.judge("class ModelNew(:\n", problem=PROBLEM, options=QUICK)
        assert broken.status.value == "compile_error", "a solution that does not parse is a verdict"


def test_a_token_is_required_and_compared_and_only_the_loopback_goes_without(tmp_path: Path) -> None:
    refused = run_cli(
        "serve", "--host", "0.0.0.0", "--device", "cpu", "--store", str(tmp_path / "s.db"), timeout=60
    )
    assert refused.returncode == 2 and "without a bearer token" in refused.stderr
    shared = tmp_path / "shared-token"
    shared.write_text("a" * 40)
    shared.chmod(0o644)
    refused = run_cli(
        "serve", "--host", "0.0.0.0", "--token-file", str(shared), "--device", "cpu", timeout=60
    )
    assert refused.returncode == 2 and "chmod 600" in refused.stderr

    token_file = tmp_path / "token"
    with Server(tmp_path / "store.db", "--token-file", str(token_file)) as server:
        assert f"a bearer token was written to {token_file}" in server.said()
        assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
        token = token_file.read_text().strip()
        assert request(server.url, "GET", "/v1/health")[0] == 401
        assert request(server.url, "GET", "/v1/health", token=token[:-1] + "x")[0] == 401
        status, answer, _ = request(server.url, "GET", "/v1/health", token=token)
        assert status == 200 and answer["device"] == "cpu" and answer["lanes"] == ["cpu"]
        with pytest.raises(ServerError) as error:
            Client(server.url, token="wrong" * 8).metrics()
        assert error.value.status == 401
        assert Client(server.url, token=token).metrics()["queue_depth"] == 0
        assert request(server.url, "GET", "/openapi.json")[1]["info"]["title"] == "cudasmith"
