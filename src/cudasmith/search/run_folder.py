"""A search's run folder, one layout for `ask`, `optimize` and the searches of a model's bench: a file per
candidate, named by the number every summary and table gives it (its id in the run store).

    candidate_12.py             its code, where the answer held any (a repeat skipped as such too)
    candidate_12.response.md    the model's whole answer
    candidate_12.verdict.json   the judge's verdict, once judged or taken from the evaluation cache

`ask` adds the prompt it sent (prompt.md, prompt.json); both keep the answers for `--model replay:DIR`
(responses.jsonl), a summary (summary.json), and `optimize` the best kernel (best.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from cudasmith.jsontypes import JsonDict


def candidate_file(run_dir: Path, candidate_id: int, suffix: str = ".py") -> Path:
    """The file of one candidate in its run's folder: `.py` its code, `.response.md` the answer,
    `.verdict.json` its verdict."""
    return run_dir / f"candidate_{candidate_id}{suffix}"


def write_code(run_dir: Path, candidate_id: int, source: str) -> Path:
    """Write a candidate's code into the run's folder (the file its judge reads); returns its path."""
    return _write(candidate_file(run_dir, candidate_id), source)


def write_answer(run_dir: Path, candidate_id: int, text: str) -> Path:
    """Write the model's answer that a candidate came from."""
    return _write(candidate_file(run_dir, candidate_id, ".response.md"), text)


def write_verdict(run_dir: Path, candidate_id: int, verdict: JsonDict) -> Path:
    """Write a candidate's verdict (its JSON, as `cudasmith eval --json` prints one)."""
    return _write(
        candidate_file(run_dir, candidate_id, ".verdict.json"), json.dumps(verdict, indent=2) + "\n"
    )


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
