"""Folders of existing solutions, in either of the two layouts a bench takes.

- The built-in suite's: `TASK_NAME/*.py` under the folder, e.g. `level1/softmax/a.py` (the folder may
  also be a level itself: `level1/` holding `softmax/a.py`). Files of one task are its samples, in name order.
- KernelBench's run layout: `level_{L}_problem_{ID}_sample_{K}_kernel.py` (what its generate_samples.py
  writes under `runs/NAME/`), judged against the problems of a KernelBench checkout (`--from`). Where
  the run directory holds KernelBench's own `eval_results.json`, what it said of each kernel is kept as
  the kernel's claim, so a bench can say how many of the "correct" ones hold up.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudasmith.errors import ProblemError, UsageError
from cudasmith.tasks.directory import DOWNLOAD_MARKERS, DOWNLOAD_REASON, problem_files
from cudasmith.tasks.problem import Problem, close_names, list_task_names, load_problem, load_task

KERNELBENCH_KERNEL = re.compile(r"level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py")
KERNELBENCH_RESULTS = "eval_results.json"
# KernelBench's baseline times (scripts/generate_baseline_time.py), when kept beside the run.
KERNELBENCH_BASELINES = "baseline_time*.json"


@dataclass(frozen=True)
class Submission:
    """One solution file to judge: the task it answers, its sample index within that task, and what
    another judge claimed of it (None when nothing was claimed)."""

    task: str
    solution: Path
    sample: int
    claimed_correct: bool | None = None
    # The speedup the other judge claimed (its reference time over the kernel's), where it timed both.
    claimed_speedup: float | None = None

    @property
    def key(self) -> str:
        """Its identity within a bench: the task and sample (stable when the folder moves)."""
        return f"{self.task}#{self.sample}"


@dataclass
class SolutionFolder:
    """What a folder holds: the problems, the submissions for them, and files that match no task."""

    root: Path
    layout: str
    problems: dict[str, Problem] = field(default_factory=dict)
    submissions: list[Submission] = field(default_factory=list)
    unmatched: list[tuple[Path, str]] = field(default_factory=list)


def _solution_files(root: Path) -> list[Path]:
    return sorted(
        p for p in root.rglob("*.py") if not p.name.startswith("_") and "__pycache__" not in p.parts
    )


def discover(folder: str | Path, kernelbench: str | Path | None = None) -> SolutionFolder:
    """The submissions in a folder of solutions, in whichever layout it uses."""
    root = Path(folder)
    if not root.is_dir():
        raise UsageError(f"solution folder not found: {root}")
    files = _solution_files(root)
    if not files:
        raise UsageError(f"no solution files (*.py) under {root}")
    if any(KERNELBENCH_KERNEL.fullmatch(p.name) for p in files):
        if kernelbench is None:
            raise UsageError(
                f"{root} holds KernelBench kernels (level_L_problem_ID_sample_K_kernel.py): "
                "give its problems with --from KERNELBENCH_CHECKOUT"
            )
        return _kernelbench_run(root, files, Path(kernelbench))
    return _suite_folder(root, files)


def _suite_folder(root: Path, files: list[Path]) -> SolutionFolder:
    known = set(list_task_names())
    found = SolutionFolder(root=root, layout="suite")
    samples: dict[str, int] = {}
    for path in files:
        relative = path.parent.relative_to(root).as_posix()
        task = next((n for n in (relative, f"{root.name}/{relative}") if n in known), None)
        if task is None:
            found.unmatched.append((path, f"{relative or '.'} is not a built-in task (cudasmith tasks)"))
            continue
        if task not in found.problems:
            found.problems[task] = load_task(task)
        found.submissions.append(Submission(task, path, samples.get(task, 0)))
        samples[task] = samples.get(task, 0) + 1
    if not found.submissions and (unknown := named_after_no_task(found)):
        raise UsageError(f"{unknown}; rename it (solutions go in TASK_NAME/*.py, e.g. level1/softmax/a.py)")
    if not found.submissions:
        raise UsageError(
            f"no solutions for built-in tasks under {root}: expected TASK_NAME/*.py (e.g. level1/softmax/a.py) "
            "or KernelBench's level_L_problem_ID_sample_K_kernel.py with --from"
        )
    return found


def named_after_no_task(found: SolutionFolder) -> str | None:
    """In a folder of the suite's layout, the first folder named after no built-in task, with the task
    names close to it (a typo: `level1/softmaxx`), as a clause of an error; None when every folder names one."""
    if found.layout != "suite" or not found.unmatched:
        return None
    unknown = sorted({path.parent.relative_to(found.root).as_posix() for path, _ in found.unmatched})
    hint = close_names(unknown[0], list_task_names()).removesuffix(" ")
    more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
    return f"{found.root / unknown[0]}{more} is named after no built-in task" + (f"; {hint}" if hint else "")


@dataclass(frozen=True)
class Claim:
    """What KernelBench's eval_results.json said of one kernel: correct or not, and its time and the
    reference's (milliseconds) where it timed them."""

    correct: bool
    runtime_ms: float | None = None
    reference_ms: float | None = None

    def speedup(self, baseline_ms: float | None) -> float | None:
        """The speedup claimed: the reference's time (its own, else the baseline JSON's) over the kernel's."""
        reference = self.reference_ms or baseline_ms
        return reference / self.runtime_ms if reference and self.runtime_ms else None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not JSON ({exc.msg})") from None


def _milliseconds(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and value > 0 else None


def _claims(directory: Path) -> dict[tuple[int, int], Claim]:
    """(problem id, sample) → what KernelBench's eval_results.json said; empty without one."""
    path = directory / KERNELBENCH_RESULTS
    if not path.is_file():
        return {}
    results = _read_json(path)
    return {
        (int(problem_id), int(entry["sample_id"])): Claim(
            bool(entry.get("correctness")),
            _milliseconds(entry.get("runtime")),
            _milliseconds(entry.get("ref_runtime")),
        )
        for problem_id, entries in results.items()
        for entry in (entries if isinstance(entries, list) else [entries])
        if isinstance(entry, dict) and "sample_id" in entry
    }


def _baseline_times(directory: Path) -> dict[tuple[int, str], float]:
    """(level, problem file name) → the reference's mean time (ms) of KernelBench's baseline JSONs kept
    beside the run (baseline_time*.json: {"level1": {"19_ReLU.py": {"mean": ms}}})."""
    found: dict[tuple[int, str], float] = {}
    for path in sorted(directory.glob(KERNELBENCH_BASELINES)):
        for level, problems in _read_json(path).items():
            number = re.fullmatch(r"level(\d+)", str(level))
            if number is None or not isinstance(problems, dict):
                continue
            for name, stats in problems.items():
                mean = _milliseconds(stats.get("mean")) if isinstance(stats, dict) else None
                if mean is not None:
                    found[(int(number.group(1)), name)] = mean
    return found


def _kernelbench_problems(checkout: Path) -> dict[tuple[int, int], tuple[str, Path]]:
    """(level, problem id) → (name, problem file) of a KernelBench checkout."""
    found = {}
    for name, path in problem_files(checkout):
        level = re.search(r"level(\d+)/(\d+)_[^/]*$", name)
        if level:
            found[(int(level.group(1)), int(level.group(2)))] = (name, path)
    if not found:
        raise UsageError(f"{checkout} is not a KernelBench checkout (no KernelBench/levelN/ID_Name.py files)")
    return found


def _load_kernelbench_problem(name: str, path: Path) -> Problem | str:
    """The problem, or why it is not loaded (KernelBench's level 4 downloads weights when imported)."""
    if any(marker in path.read_text(errors="replace") for marker in DOWNLOAD_MARKERS):
        return f"its problem {DOWNLOAD_REASON}"
    try:
        return load_problem(path, name=name)
    except ProblemError as exc:
        return f"its problem does not load: {exc}"


def _kernelbench_run(root: Path, files: list[Path], checkout: Path) -> SolutionFolder:
    problems = _kernelbench_problems(checkout)
    found = SolutionFolder(root=root, layout="kernelbench")
    claims: dict[Path, dict[tuple[int, int], Claim]] = {}
    baselines: dict[Path, dict[tuple[int, str], float]] = {}
    loaded: dict[str, Problem | str] = {}
    order: dict[Submission, tuple[int, int, int]] = {}
    for path in files:
        match = KERNELBENCH_KERNEL.fullmatch(path.name)
        if match is None:
            found.unmatched.append((path, "not named level_L_problem_ID_sample_K_kernel.py"))
            continue
        level, problem_id, sample = (int(g) for g in match.groups())
        if (level, problem_id) not in problems:
            found.unmatched.append((path, f"{checkout} has no level {level} problem {problem_id}"))
            continue
        name, problem_path = problems[(level, problem_id)]
        if name not in loaded:
            loaded[name] = _load_kernelbench_problem(name, problem_path)
        problem = loaded[name]
        if isinstance(problem, str):
            found.unmatched.append((path, problem))
            continue
        found.problems[name] = problem
        if path.parent not in claims:
            claims[path.parent] = _claims(path.parent)
            baselines[path.parent] = _baseline_times(path.parent)
        claim = claims[path.parent].get((problem_id, sample))
        baseline_ms = baselines[path.parent].get((level, problem_path.name))
        submission = Submission(
            name,
            path,
            sample,
            None if claim is None else claim.correct,
            None if claim is None else claim.speedup(baseline_ms),
        )
        found.submissions.append(submission)
        order[submission] = (level, problem_id, sample)
    if not found.submissions:
        raise UsageError(f"no kernel under {root} matches a problem of {checkout}")
    found.submissions.sort(key=order.__getitem__)
    return found
