"""Recorded answers served back in order (`replay:<path>`): re-evaluate a past run on new hardware, or
make a test deterministic.

The path is a JSONL file or a run directory holding `responses.jsonl` (what `cudasmith ask` records).
Each line is a recorded call `{"completions": [{"text": …, "finish_reason": …, …}, …]}`, a single
completion `{"text": …}`, or a bare JSON string.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cudasmith.errors import UsageError
from cudasmith.llm.base import Completion, Provider, ProviderError, Request

# The file a run directory records its model's answers in.
RESPONSES_FILE = "responses.jsonl"


def _completions_of(entry: Any, where: str) -> list[Completion]:
    if isinstance(entry, str):
        return [Completion(text=entry, finish_reason="stop", model="replay")]
    if isinstance(entry, dict) and isinstance(entry.get("completions"), list):
        return [c for item in entry["completions"] for c in _completions_of(item, where)]
    if isinstance(entry, dict) and isinstance(entry.get("text"), str):
        return [Completion.from_dict(entry)]
    raise UsageError(f"{where}: neither a recorded call, a completion nor a string")


def load_recording(path: Path) -> list[Completion]:
    """Every completion recorded in a JSONL file or a run directory, in order."""
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
        # The money was spent when they were recorded, not now.
        return [Completion(**{**c.to_dict(), "cost_usd": 0.0}) for c in batch]
