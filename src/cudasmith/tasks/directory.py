"""Problems from a directory: a KernelBench checkout (its level directories) or any folder of problem files.

A KernelBench checkout's problems are named like the built-in tasks, `kernelbench/level1/19_ReLU`. Files
that download model weights when imported (KernelBench's level 4 calls `from_pretrained`) are skipped
with that reason rather than imported, so listing a checkout never touches the network.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from cudasmith.errors import ProblemError, UsageError
from cudasmith.tasks.problem import Problem, load_problem

KERNELBENCH = "kernelbench"
# Source text that marks a problem needing model downloads (Hugging Face weights and configs).
DOWNLOAD_MARKERS = ("from_pretrained",)
DOWNLOAD_REASON = "needs model downloads (from_pretrained); not loaded"


@dataclass(frozen=True)
class Unloaded:
    """A problem file that was not loaded, and why."""

    name: str
    path: Path
    reason: str


@dataclass
class ProblemDirectory:
    """What a directory holds: loaded problems, files skipped on purpose, and files that failed to load."""

    root: Path
    problems: list[Problem] = field(default_factory=list)
    skipped: list[Unloaded] = field(default_factory=list)
    failed: list[Unloaded] = field(default_factory=list)


def _natural_key(path: Path) -> tuple[int, str]:
    """KernelBench's '2_Foo' sorts before '10_Bar'; names without a number come after, by name."""
    match = re.match(r"(\d+)", path.stem)
    return (int(match.group(1)) if match else 1 << 30, path.stem)


def _python_files(directory: Path) -> list[Path]:
    return sorted(
        (p for p in directory.glob("*.py") if not p.name.startswith("_")),
        key=_natural_key,
    )


def _groups(directory: Path) -> tuple[str, list[tuple[str, Path]]]:
    """The name prefix and the (group name, folder) pairs holding problem files under `directory`."""
    base = directory / "KernelBench" if (directory / "KernelBench").is_dir() else directory
    subdirectories = sorted(
        (d for d in base.iterdir() if d.is_dir() and _python_files(d)), key=lambda d: _natural_key(d)
    )
    looks_like_kernelbench = base.name == "KernelBench" or any(
        re.fullmatch(r"level\d+", d.name) for d in subdirectories
    )
    if subdirectories and not _python_files(base):
        prefix = KERNELBENCH if looks_like_kernelbench else base.name
        return prefix, [(d.name, d) for d in subdirectories]
    if base.parent.name == "KernelBench" and re.fullmatch(r"level\d+", base.name):
        return KERNELBENCH, [(base.name, base)]
    return base.name, [("", base)]


def problem_files(directory: str | Path) -> list[tuple[str, Path]]:
    """(name, path) of every problem file under a directory, levels and files in natural order."""
    directory = Path(directory)
    if not directory.is_dir():
        raise UsageError(f"problem directory not found: {directory}")
    prefix, groups = _groups(directory)
    files = [
        ("/".join(part for part in (prefix, group, path.stem) if part), path)
        for group, folder in groups
        for path in _python_files(folder)
    ]
    if not files:
        raise UsageError(f"no problem files (*.py) in {directory} or its level directories")
    return files


def load_problem_dir(directory: str | Path) -> ProblemDirectory:
    """Load every problem under a directory; files that need downloads are skipped, broken ones recorded."""
    listing = ProblemDirectory(root=Path(directory).resolve())
    for name, path in problem_files(directory):
        if any(marker in path.read_text(errors="replace") for marker in DOWNLOAD_MARKERS):
            listing.skipped.append(Unloaded(name, path, DOWNLOAD_REASON))
            continue
        try:
            listing.problems.append(load_problem(path, name=name))
        except ProblemError as exc:
            listing.failed.append(Unloaded(name, path, str(exc).removeprefix(f"{path}: ")))
    return listing
