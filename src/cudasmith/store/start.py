"""A run about to start: the row every run kind (optimize, ask, bench) writes first, made in one place."""

from __future__ import annotations

import secrets
from typing import Any

from cudasmith.device import software_versions
from cudasmith.exec import LaneChoice, Lanes
from cudasmith.store.db import new_run_id
from cudasmith.store.records import Run


def new_run(
    kind: str,
    task: str,
    task_version: str,
    device: str,
    seed: int | None,
    lanes: LaneChoice | None = None,
    **fields: Any,
) -> Run:
    """A new run judged on `device`: a fresh id (unless `fields` name one), the device's name, the software
    and judge versions verdicts depend on, and the judge's secret seed (`seed`, else drawn at random).
    `lanes`: where it is judged, which names the device and the judge (default: this machine)."""
    lanes = lanes or Lanes()
    return Run(
        kind=kind,
        task=task,
        task_version=task_version,
        device=device,
        device_name=lanes.device_name(device),
        versions=software_versions(),
        harness_version=lanes.judge_version(),
        secret_seed=seed if seed is not None else secrets.randbits(32),
        **{"id": new_run_id(kind), **fields},
    )
