"""Recorded answers served back in order (`replay:<path>`): re-evaluate a past run on new hardware, or
make a test deterministic.

The path is a JSONL file, a run directory holding `responses.jsonl` (what `cudasmith ask` records),
or a run store (`runs/cudasmith.db`: its latest run; `runs/cudasmith.db#RUN` for another), whose
proposals' answers are served in the order they were asked. Each JSONL line is a recorded call
`{"completions": [{"text": …, "finish_reason": …, …}, …]}`, a single completion `{"text": …}`, or a bare
JSON string. A completion whose `extra` holds `delay_s` is served after that many seconds: a model's
latency, simulated (benchmarks/optimize_gpu.py measures how long the judge waits for answers with it).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from cudasmith.errors import UsageError
from cudasmith.llm.base import Completion, Provider, ProviderError, Request
from cudasmith.store import RunStore

# The file a run directory records its model's answers in.
RESPONSES_FILE = "responses.jsonl"
# The first bytes of every SQLite file.
SQLITE_HEADER = b"SQLite format 3\x00"


def _completions_of(entry: Any, where: str) -> list[Completion]:
    if isinstance(entry, str):
        return [Completion(text=entry, finish_reason="stop", model="replay")]
    if isinstance(entry, dict) and isinstance(entry.get("completions"), list):
        return [c for item in entry["completions"] for c in _completions_of(item, where)]
    if isinstance(entry, dict) and isinstance(entry.get("text"), str):
        return [Completion.from_dict(entry)]
    raise UsageError(f"{where}: neither a recorded call, a completion nor a string")


def _is_store(path: Path) -> bool:
    with path.open("rb") as file:
        return file.read(16) == SQLITE_HEADER


def _from_store(path: Path, run_id: str | None) -> list[Completion]:
    with RunStore(path) as store:
        runs = store.runs()
        if run_id is None and not runs:
            raise UsageError(f"no runs in {path}")
        run = store.run(run_id) if run_id else runs[-1]
        calls = store.calls(run.id, "propose")
        return [Completion.from_dict(c.completion_dict()) for call in calls for c in call.completions]


def load_recording(path: Path) -> list[Completion]:
    """Every completion recorded in a JSONL file, a run directory or a run store, in order."""
    stored, _, run_id = str(path).partition("#")
    if Path(stored).is_file() and _is_store(Path(stored)):
        return _from_store(Path(stored), run_id or None)
    file = path / RESPONSES_FILE if path.is_dir() else path
    if not file.is_file():
        raise UsageError(f"no recorded responses at {file}")
    completions: list[Completion] = []
    for number, line in enumerate(file.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{file}:{number}: not JSON ({exc.msg})") from None
        completions += _completions_of(entry, f"{file}:{number}")
    return completions


class ReplayProvider(Provider):
    """Serves the recorded completions one after another; the spent budget stays untouched."""

    def __init__(self, spec: str, path: str) -> None:
        self.spec = spec
        self.path = Path(path)
        self.recorded = load_recording(self.path)
        self.max_n_per_call = max(1, len(self.recorded))
        self.served = 0

    async def sample(self, request: Request) -> list[Completion]:
        if self.served >= len(self.recorded):
            raise ProviderError(
                f"all {len(self.recorded)} recorded completions of {self.path} have been served", False
            )
        batch = self.recorded[self.served : self.served + request.n]
        self.served += len(batch)
        delays = [c.extra.get("delay_s") for c in batch]
        delay = max((float(d) for d in delays if isinstance(d, int | float)), default=0.0)
        if delay > 0:
            await asyncio.sleep(delay)
        # The money was spent when they were recorded, not now.
        return [replace(c, cost_usd=0.0) for c in batch]
