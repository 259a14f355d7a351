"""Baselines: eager PyTorch, torch.compile (default, and max-autotune-no-cudagraphs) and the task's EXPERT.

They are timed by the candidates' protocol (same plan, same rotation of input sets, same device), in a
worker process of their own so that a slow or failing compilation costs that baseline only, and once
per task, config, device and software versions: the result is cached on disk, so a bench over many
candidates times each baseline once.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from dataclasses import asdict
from types import ModuleType
from typing import Any

from cudasmith.errors import UsageError
from cudasmith.harness.process import WorkerFailure, WorkerProcess
from cudasmith.runtime.cache import cache_dir, content_key, write_atomically
from cudasmith.tasks.problem import Problem
from cudasmith.timing.protocol import TimingPlan

BASELINES = {
    "eager": "eager PyTorch",
    "compile": "torch.compile",
    "compile-max-autotune": "torch.compile max-autotune-no-cudagraphs",
    "expert": "expert",
}
COMPILE_MODES = {"compile": None, "compile-max-autotune": "max-autotune-no-cudagraphs"}
DEFAULT_CUDA = ("eager", "compile", "compile-max-autotune", "expert")
# On the CPU, torch.compile builds C++ for each config (tens of seconds): asked for, not by default.
DEFAULT_CPU = ("eager", "expert")
# Starting the baseline worker, and timing one baseline on one config with its compilation
# (max-autotune benchmarks many kernels for every operator).
LOAD_TIMEOUT_S = 300.0
BASELINE_TIMEOUT_S = 1800.0


def _launch_us(device: str, name: Any) -> float | None:
    """The launch cost (µs) GPU times include here, None where there is none."""
    if not device.startswith("cuda") or not isinstance(name, str):
        return None
    from cudasmith.device.launch_cost import load_launch_cost

    cost = load_launch_cost(name)
    return cost.launch_us if cost is not None else None


def default_baselines(device: str) -> tuple[str, ...]:
    """The baselines timed when none are asked for."""
    return DEFAULT_CUDA if device.startswith("cuda") else DEFAULT_CPU


def parse_baselines(text: str) -> tuple[str, ...]:
    """'eager,compile' → ('eager', 'compile'); eager is always timed (speedups are against it)."""
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in BASELINES]
    if unknown:
        raise UsageError(f"unknown baseline {unknown[0]!r}; choose from {', '.join(BASELINES)}")
    return ("eager", *(n for n in names if n != "eager"))


def build_baseline(name: str, problem: ModuleType, expert: Callable[[type], Any], eager: Any) -> Any:
    """The callable a worker times for a baseline (worker side); `expert(cls)` builds a class like Model."""
    if name == "eager":
        return eager
    if name in COMPILE_MODES:
        import torch

        torch._dynamo.reset()  # each config compiles alone, with static shapes
        return torch.compile(eager, mode=COMPILE_MODES[name], dynamic=False)
    if name == "expert":
        implementation = getattr(problem, "EXPERT", None)
        if isinstance(implementation, type):
            return expert(implementation)
        if callable(implementation):
            return implementation
        raise ValueError("the problem's EXPERT is neither a class built like Model nor a callable")
    raise ValueError(f"unknown baseline {name!r}")


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class BaselineTimer:
    """Times a problem's baselines on its configs, from the cache when it can (parent side)."""

    def __init__(
        self,
        problem: Problem,
        device: str,
        names: tuple[str, ...],
        plan: TimingPlan,
        identity: dict[str, Any],
        use_cache: bool = True,
    ) -> None:
        self.problem = problem
        self.device = device
        self.names = tuple(n for n in names if n != "expert" or problem.expert)
        self.plan = plan
        # Device name and software versions: what else a cached timing depends on; on a GPU also the
        # calibrated launch cost that GPU times include (a calibration makes earlier times stale).
        self.identity = identity
        self.launch_us = _launch_us(device, identity.get("device"))
        self.use_cache = use_cache
        self._worker: WorkerProcess | None = None

    def _path(self, name: str, config: dict[str, Any]) -> Any:
        key = content_key(
            self.problem.source_hash,
            json.dumps(config, sort_keys=True),
            name,
            json.dumps(self.identity, sort_keys=True),
            json.dumps(asdict(self.plan), sort_keys=True),
            repr(self.launch_us),
        )
        return cache_dir("baselines") / f"{key}.json"

    def _spawn(self) -> WorkerProcess:
        if self._worker is None or not self._worker.alive:
            worker = WorkerProcess(
                {"problem": str(self.problem.path), "device": self.device, "role": "reference"}
            )
            try:
                reply, _ = worker.request({"op": "load"}, LOAD_TIMEOUT_S, "loading the problem for baselines")
            except WorkerFailure:
                worker.close()
                raise
            if not reply.get("ok"):
                worker.close()
                raise WorkerFailure(
                    "runtime_error", reply.get("reason", "the baseline worker failed to load")
                )
            self._worker = worker
        return self._worker

    def _measure(self, name: str, request: dict[str, Any], label: str) -> dict[str, Any]:
        what = f"timing {BASELINES[name]} on {label}"
        try:
            reply, _ = self._spawn().request({**request, "baseline": name}, BASELINE_TIMEOUT_S, what)
        except WorkerFailure as failure:
            self.close()
            return {"error": str(failure)}
        if not reply.get("ok"):
            return {"error": reply.get("reason", "failed")}
        return {"measurement": reply["measurement"], "measured_at": _now()}

    def time(
        self,
        config: dict[str, Any],
        request: dict[str, Any],
        label: str,
        progress: Callable[[str], None] | None = None,
    ) -> dict[str, dict[str, Any]]:
        """Each baseline's entry for one config: {'measurement': summary} or {'error': reason}, with 'cached'."""
        results = {}
        for name in self.names:
            path = self._path(name, config)
            if self.use_cache and path.is_file():
                try:
                    results[name] = {**json.loads(path.read_text()), "cached": True}
                    continue
                except ValueError:
                    path.unlink(missing_ok=True)
            if progress is not None:
                progress(f"timing {BASELINES[name]}")
            entry = self._measure(name, request, label)
            # Eager PyTorch must time; its failure is the harness's and is not remembered.
            if "error" not in entry or name != "eager":
                write_atomically(path, json.dumps(entry).encode())
            results[name] = {**entry, "cached": False}
        return results

    def close(self) -> None:
        """Stop the baseline worker, if one runs."""
        if self._worker is not None:
            self._worker.close()
            self._worker = None
