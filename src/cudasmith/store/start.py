"""A run about to start: the row every run kind (optimize, ask, bench) writes first, made in one place."""

from __future__ import annotations

import secrets
from typing import Any

from cudasmith.device import software_versions
from cudasmith.hardware import device_name
from cudasmith.harness.version import harness_version
from cudasmith.store.db import new_run_id
from cudasmith.store.records import Run


def new_run(kind: str, task: str, task_version: str, device: str, seed: int | None, **fields: Any) -> Run:
    """A new run judged on `device`: a fresh id (unless `fields` name one), the device's name, the software
    and judge versions verdicts depend on, and the judge's secret seed (`seed`, else drawn at random)."""
    return Run(
        kind=kind,
        task=task,
        task_version=task_version,
        device=device,
        device_name=device_name(device),
        versions=software_versions(),
        harness_version=harness_version(),
        secret_seed=seed if seed is not None else secrets.randbits(32),
        **{"id": new_run_id(kind), **fields},
    )
