"""What crosses to wherever a candidate is judged: the problem and the solution as text (a Ray worker on
another node cannot read this machine's files), the judge's options, and a name for the file."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from cudasmith.harness.options import EvalOptions
from cudasmith.tasks.problem import Problem, load_problem


@dataclass(frozen=True)
class ProblemRef:
    """A problem as it travels: its name, its file here and its source."""

    name: str
    path: str
    source: str

    @classmethod
    def of(cls, problem: Problem) -> ProblemRef:
        return cls(problem.name, str(problem.path), problem.source)

    @classmethod
    def from_file(cls, path: str | Path, name: str | None = None) -> ProblemRef:
        """A problem file as it travels, read but not imported (nothing of torch): what `of` gives for the
        problem loaded from that file under that name (load_problem's default name is the file's stem)."""
        path = Path(path)
        return cls(name or path.stem, str(path), path.read_text())

    @cached_property
    def source_hash(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    def file(self, scratch: Path) -> Path:
        """The problem's file: its own where that is here and unchanged, else a copy in `scratch`."""
        path = Path(self.path)
        if not (path.is_file() and path.read_text(errors="replace") == self.source):
            path = scratch / "problems" / self.source_hash / Path(self.path).name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self.source)
        return path

    def load(self, scratch: Path) -> Problem:
        """The problem, loaded from `file(scratch)`."""
        return load_problem(self.file(scratch), name=self.name)


@dataclass(frozen=True)
class Job:
    """One candidate to judge: `key` names it in logs and stats, `path` is its file where it was written
    (used where that file is readable and unchanged), `file_name` the name of a copy made elsewhere.
    `queued_alike`: candidates of the same session still queued when the executor handed this one to a
    lane (None: not known), so that the session starts no more workers ahead than will be used;
    `handed_out`: how many candidates the executor had handed out then, this one included (of two
    counts, the later one holds). `best_speedup`: the run's best confirmed speedup when the candidate was
    handed over, where its options screen candidates (harness/confirm.py: the bar a screen must come near)."""

    key: str
    problem: ProblemRef
    options: EvalOptions
    source: str
    file_name: str
    path: str | None = None
    queued_alike: int | None = None
    handed_out: int = 0
    best_speedup: float | None = None

    @cached_property
    def session_key(self) -> tuple[str, str]:
        """Candidates with the same key can share a judge session (same problem, same options). Kept
        once made: the executor compares it over its queue at each hand-out."""
        return self.problem.source_hash, repr(self.options)

    def solution_file(self, scratch: Path) -> Path:
        """The solution's file: its own where that is here and unchanged, else a copy in `scratch`."""
        if self.path is not None:
            own = Path(self.path)
            if own.is_file() and own.read_text(errors="replace") == self.source:
                return own
        digest = hashlib.sha256(self.source.encode()).hexdigest()[:16]
        copy = scratch / "solutions" / digest / self.file_name
        copy.parent.mkdir(parents=True, exist_ok=True)
        if not copy.is_file():
            copy.write_text(self.source)
        return copy
