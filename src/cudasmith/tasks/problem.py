"""Problem files: the KernelBench form (Model, get_inputs, get_init_inputs) and our extensions.

A problem file is trusted code (it comes from the suite or from the user), so the parent process may
import it to read its configs; candidate code is never imported here.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.util
import inspect
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from cudasmith.errors import ProblemError, UsageError

# One config of a problem: the keyword arguments its get_inputs() and get_init_inputs() take.
Config = dict[str, Any]

SUITE_DIR = Path(__file__).parent / "suite"
L2_STATES = ("cold", "hot")
# Levels whose tasks may keep PyTorch for the parts a candidate does not replace (reported, not refused):
# fused operators and whole models. Everywhere else PyTorch compute inside forward is refused.
TORCH_OPS_ALLOWED_LEVELS = ("level2", "level3")
FLOAT_DTYPES = ("float64", "float32", "float16", "bfloat16")


@dataclass(frozen=True)
class Problem:
    """A loaded problem file: what the harness needs to know without running anything."""

    name: str
    path: Path
    source: str
    configs: tuple[Config, ...]
    # As declared: a value may be a range, drawn per session (tasks.hidden).
    hidden_configs: tuple[Config, ...] = ()
    tolerance: dict[str, dict[str, float]] = field(default_factory=dict)
    dtype: str | None = None
    l2_state: str = "cold"
    has_validate: bool = False
    has_flops: bool = False
    has_bytes_moved: bool = False
    expert: str | None = None
    description: str = ""
    allowed_torch_ops: str | tuple[str, ...] = ()

    @property
    def source_hash(self) -> str:
        """Hash of the problem's source: the identity of its reference for caches."""
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    def all_configs(self) -> list[tuple[Config, bool]]:
        """Every config paired with whether it is hidden, public ones first."""
        return [(c, False) for c in self.configs] + [(c, True) for c in self.hidden_configs]


def load_module(path: Path, prefix: str) -> ModuleType:
    """Import a Python file under a fresh module name (never shadowing a real package)."""
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    module_name = f"_cudasmith_{prefix}_{digest}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ProblemError(f"{path}: not an importable Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def _check_configs(path: Path, name: str, value: object, ranges: bool = False) -> tuple[Config, ...]:
    """The configs as declared; with `ranges`, a value may be a non-empty range (drawn per session)."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(c, dict) for c in value):
        raise ProblemError(f"{path}: {name} must be a list of dicts")
    for config in value:
        if ranges and any(isinstance(v, range) and len(v) == 0 for v in config.values()):
            raise ProblemError(f"{path}: {name} entry {config!r} has an empty range")
        try:
            json.dumps({k: v[0] if ranges and isinstance(v, range) else v for k, v in config.items()})
        except TypeError as exc:
            raise ProblemError(f"{path}: {name} entry {config!r} is not JSON-serialisable ({exc})") from None
        if not all(isinstance(k, str) for k in config):
            raise ProblemError(f"{path}: {name} entry {config!r} has a key that is not a string")
    return tuple(dict(c) for c in value)


def _check_accepts(path: Path, func: Any, configs: tuple[Config, ...]) -> None:
    """Each config key must be a keyword argument of get_inputs/get_init_inputs (or **kwargs)."""
    params = inspect.signature(func).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    for config in configs:
        unknown = set(config) - set(params)
        if unknown:
            raise ProblemError(
                f"{path}: {func.__name__}() takes no argument named {sorted(unknown)[0]!r} (from config {config})"
            )


def problem_from_module(module: ModuleType, path: Path, name: str) -> Problem:
    """Read and validate the problem contract from an imported module."""
    if not inspect.isclass(getattr(module, "Model", None)):
        raise ProblemError(f"{path}: no class Model (the reference) defined")
    if not callable(getattr(module, "get_inputs", None)):
        raise ProblemError(f"{path}: no function get_inputs() defined")
    configs = _check_configs(path, "CONFIGS", getattr(module, "CONFIGS", [{}]))
    if not configs:
        raise ProblemError(f"{path}: CONFIGS is empty")
    hidden = _check_configs(path, "HIDDEN_CONFIGS", getattr(module, "HIDDEN_CONFIGS", []), ranges=True)
    for func_name in ("get_inputs", "get_init_inputs"):
        func = getattr(module, func_name, None)
        if func is not None:
            _check_accepts(path, func, configs + hidden)
    tolerance = getattr(module, "TOLERANCE", {})
    if not isinstance(tolerance, dict) or not all(
        isinstance(v, dict) and set(v) <= {"rtol", "atol", "norm"} for v in tolerance.values()
    ):
        raise ProblemError(f"{path}: TOLERANCE must map a dtype name to {{'rtol', 'atol', 'norm'}} floats")
    dtype = getattr(module, "DTYPE", None)
    if dtype is not None and not isinstance(dtype, str):
        raise ProblemError(f"{path}: DTYPE must be a dtype name such as 'float32'")
    l2_state = getattr(module, "L2_STATE", "cold")
    if l2_state not in L2_STATES:
        raise ProblemError(f"{path}: L2_STATE must be one of {L2_STATES}, not {l2_state!r}")
    allowed = getattr(module, "ALLOWED_TORCH_OPS", None)
    if allowed is None:
        # The level is the name's last folder: 'level2' in level2/x and in kernelbench/level2/x.
        level = name.rsplit("/", 1)[0].rsplit("/", 1)[-1] if "/" in name else ""
        allowed = "all" if level in TORCH_OPS_ALLOWED_LEVELS else ()
    if allowed != "all" and not (
        isinstance(allowed, (list, tuple)) and all(isinstance(a, str) for a in allowed)
    ):
        raise ProblemError(f"{path}: ALLOWED_TORCH_OPS must be 'all' or a list of names such as 'aten::mm'")
    expert = getattr(module, "EXPERT", None)
    expert_name = None if expert is None else getattr(expert, "__name__", str(expert))
    return Problem(
        name=name,
        path=path.resolve(),
        source=path.read_text(),
        configs=configs,
        hidden_configs=hidden,
        tolerance={str(k): {kk: float(vv) for kk, vv in v.items()} for k, v in tolerance.items()},
        dtype=dtype,
        l2_state=l2_state,
        has_validate=callable(getattr(module, "validate", None)),
        has_flops=callable(getattr(module, "flops", None)),
        has_bytes_moved=callable(getattr(module, "bytes_moved", None)),
        expert=expert_name,
        description=_first_paragraph(module.__doc__) or _first_paragraph(module.Model.__doc__),
        allowed_torch_ops=allowed if allowed == "all" else tuple(allowed),
    )


def _first_paragraph(docstring: str | None) -> str:
    """A docstring's first paragraph on one line (KernelBench describes its problems in Model's docstring)."""
    return " ".join(inspect.cleandoc(docstring or "").split("\n\n")[0].split())


def load_problem(path: str | Path, name: str | None = None) -> Problem:
    """Load a problem file from disk; a one-line ProblemError says what is wrong with it."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"problem file not found: {path}")
    try:
        module = load_module(path, "problem")
    except ProblemError:
        raise
    except Exception as exc:
        raise ProblemError(f"{path}: importing the problem failed: {type(exc).__name__}: {exc}") from None
    return problem_from_module(module, path, name or path.stem)


def solution_file(path: str | Path) -> Path:
    """A solution file as named, checked before anything is judged: one that exists and is a Python file
    (.py); a one-line UsageError naming it as given otherwise."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"solution file not found: {path}" if not path.exists() else f"{path} is not a file")
    if path.suffix != ".py":
        raise UsageError(f"{path} is not a Python file: a solution is a .py file that defines ModelNew")
    return path


def close_names(name: str, names: list[str]) -> str:
    """'did you mean a, b? ' for the names close to `name` (the start of an error's advice), else ''."""
    close = difflib.get_close_matches(name, names, n=3)
    return f"did you mean {', '.join(close)}? " if close else ""


def task_path(name: str) -> Path:
    """The file of a built-in task such as 'level1/softmax'."""
    path = SUITE_DIR / f"{name}.py"
    if "/" not in name or ".." in name or not path.is_file():
        hint = close_names(name, list_task_names())
        raise UsageError(f"unknown task {name!r}; {hint}`cudasmith tasks` lists them all")
    return path


def load_task(name: str) -> Problem:
    """Load a built-in task by name."""
    return load_problem(task_path(name), name=name)


def list_task_names() -> list[str]:
    """Names of every built-in task, sorted."""
    return sorted(
        str(p.relative_to(SUITE_DIR).with_suffix(""))
        for p in SUITE_DIR.rglob("*.py")
        if not p.name.startswith("_")
    )
