"""Trajectories for SFT and RL: one row per turn (a model's answer that was judged), with the chain of
turns that led to it.

Reward (as in Kevin, Cognition's multi-turn RL for CUDA kernels): a turn whose kernel is not correct
earns 0, whatever its status (a rejected kernel that cheated earns nothing); a correct kernel earns
CORRECT_BONUS plus its speedup over eager PyTorch (geometric mean over configs, timed side by side),
or CORRECT_BONUS alone when it was not timed (a search's screened, unconfirmed kernel included). A
turn's `discounted_return` adds the returns of the turns that refined it, discounted by RETURN_DISCOUNT
per step (the mean over its refinements when there are several), so an answer that led to a fast kernel
is credited for it.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import TypedDict

from cudasmith.errors import UsageError
from cudasmith.harness.verdict import Verdict
from cudasmith.jsontypes import JsonDict
from cudasmith.store import CandidateRecord, Run, RunStore, Turn
from cudasmith.store.metrics import screened_speedup_of, speedup_of
from cudasmith.store.runs import task_runs

CORRECT_BONUS = 0.3
RETURN_DISCOUNT = 0.4
FORMATS = ("jsonl", "parquet")


def reward(verdict: Verdict | JsonDict | None) -> float:
    """A verdict's reward (a Verdict, or its JSON), the one `export` writes and `cudasmith.reward` gives:
    0 unless correct; CORRECT_BONUS plus the speedup over eager PyTorch when correct."""
    if isinstance(verdict, dict):
        verdict = Verdict.from_dict(verdict)
    if verdict is None or not verdict.correct:
        return 0.0
    return CORRECT_BONUS + (speedup_of(verdict) or 0.0)


class TurnRow(TypedDict):
    """One turn of a chain: the prompt sent, the answer, the code taken from it, its status and reward."""

    candidate_id: int
    prompt: list[dict[str, str]]
    response: str | None
    code: str | None
    status: str | None
    reward: float


class TrajectoryRow(TypedDict):
    """One judged answer of a model with the chain of turns that led to it (a line of the export)."""

    run_id: str
    task: str
    candidate_id: int
    turn: int
    trajectory_id: int
    parents: list[int]
    chain: list[int]
    round: int
    operator: str | None
    prompt: list[dict[str, str]]
    response: str | None
    code: str | None
    status: str | None
    speedup: float | None
    # A search's screen, never a measured speedup (harness/confirm.py); not in the reward.
    screened_speedup: float | None
    reward: float
    discounted_return: float
    # The verdict's JSON (Verdict.to_dict()).
    verdict: JsonDict
    history: list[TurnRow]


def _turn(turn: Turn) -> TurnRow:
    return {
        "candidate_id": turn.candidate_id,
        "prompt": turn.messages,
        "response": turn.response,
        "code": turn.source,
        "status": turn.status,
        "reward": reward(turn.verdict),
    }


def _returns(candidates: list[CandidateRecord]) -> dict[int, float]:
    """Each candidate's discounted return over the turns that refined it (children by first parent)."""
    children: dict[int, list[int]] = defaultdict(list)
    for candidate in candidates:
        if candidate.parents:
            children[candidate.parents[0]].append(candidate.id)
    by_id = {c.id: c for c in candidates}
    returns: dict[int, float] = {}
    # Children are made after their parents, so the newest first sees every child's return computed.
    for candidate in sorted(candidates, key=lambda c: c.id, reverse=True):
        later = [returns[c] for c in children[candidate.id] if c in returns]
        future = RETURN_DISCOUNT * statistics.fmean(later) if later else 0.0
        returns[candidate.id] = reward(by_id[candidate.id].verdict) + future
    return returns


def trajectory_rows(store: RunStore, run_id: str) -> list[TrajectoryRow]:
    """One row per judged answer of a model in the run (a bench of a model: in its searches, task by
    task), each holding the whole chain before it."""
    run = store.run(run_id)
    searches = task_runs(store, run) if run.kind == "bench" else {}
    return [row for search in (list(searches.values()) or [run]) for row in _search_rows(store, search)]


def _search_rows(store: RunStore, run: Run) -> list[TrajectoryRow]:
    candidates = store.candidates(run.id)
    returns = _returns(candidates)
    rows: list[TrajectoryRow] = []
    for candidate in candidates:
        if candidate.completion_id is None or candidate.verdict is None:
            continue
        chain = store.chain(candidate.id)
        this = _turn(chain[-1])
        rows.append(
            {
                "run_id": run.id,
                "task": candidate.meta.get("task") or run.task,
                "candidate_id": candidate.id,
                "turn": len(chain) - 1,
                "trajectory_id": chain[0].candidate_id,
                "parents": candidate.parents,
                "chain": [t.candidate_id for t in chain],
                "round": candidate.round,
                "operator": candidate.operator,
                "prompt": this["prompt"],
                "response": this["response"],
                "code": this["code"],
                "status": this["status"],
                "speedup": speedup_of(candidate.verdict),
                # A search's screen, never a measured speedup (harness/confirm.py); not in the reward.
                "screened_speedup": screened_speedup_of(candidate.verdict),
                "reward": this["reward"],
                "discounted_return": returns[candidate.id],
                "verdict": candidate.verdict.to_dict(),
                "history": [_turn(t) for t in chain[:-1]],
            }
        )
    return rows


def _parquet(rows: list[TrajectoryRow], path: Path) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UsageError(
            "Parquet needs pyarrow: pip install 'cudasmith[parquet]' (or use --format jsonl)"
        ) from None

    # A verdict's shape varies with status and version: Parquet keeps it as JSON text, so every row of
    # every run fits one schema. The prompt and the chain's turns stay nested (lists of structs).
    table = pa.Table.from_pylist([{**row, "verdict": json.dumps(row["verdict"])} for row in rows])
    pq.write_table(table, path)


def export_run(store: RunStore, run_id: str, path: str | Path, fmt: str = "jsonl") -> tuple[Path, int]:
    """Write the run's trajectories to `path` as JSON Lines or Parquet; returns the path and row count."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    rows = trajectory_rows(store, run_id)
    if not rows:
        raise UsageError(
            f"run {run_id} has no judged answers of a model to export (a bench of files has none)"
        )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "parquet":
        _parquet(rows, path)
    else:
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path, len(rows)


def load_rows(path: str | Path) -> list[JsonDict]:
    """Rows written by export_run, from either format (the verdict decoded again)."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return [{**row, "verdict": json.loads(row["verdict"])} for row in pq.read_table(path).to_pylist()]
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
