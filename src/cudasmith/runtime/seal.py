"""The judge's key, and the MACs it puts on what it stores, so that what a candidate writes is never trusted.

A candidate's process cannot read the key: it lives in the user's configuration folder, which the sandbox
(harness/walls/sandbox.py) leaves out of everything a candidate may read. Verdict rows, cached baselines,
measured device peaks and harvested builds carry an HMAC-SHA256 under it; whatever fails the check is
never reused (it is measured, judged or built again) and the report calls it tampered.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cudasmith.jsontypes import JsonDict, JsonObject

# Where the key lives unless this variable says otherwise.
KEY_ENV = "CUDASMITH_KEY_FILE"
KEY_BYTES = 32
# Only the user reads or writes the key.
KEY_MODE = 0o600
# The field of a sealed JSON document that holds its MAC.
MAC_FIELD = "mac"


def key_path() -> Path:
    """$CUDASMITH_KEY_FILE, else cudasmith/judge.key in $XDG_CONFIG_HOME (~/.config)."""
    if os.environ.get(KEY_ENV):
        return Path(os.environ[KEY_ENV])
    config = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(config) / "cudasmith" / "judge.key"


def judge_key() -> bytes:
    """The key, made on first use (readable by the user alone)."""
    path = key_path()
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, KEY_MODE)
    except FileExistsError:  # another process made it first
        return path.read_bytes()
    with os.fdopen(fd, "wb") as handle:
        handle.write(secrets.token_bytes(KEY_BYTES))
    return path.read_bytes()


def mac(*parts: str | bytes) -> str:
    """The HMAC-SHA256 of the parts (each length-prefixed, so no two lists of parts collide)."""
    digest = hmac.new(judge_key(), digestmod=hashlib.sha256)
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def verify(expected: str | None, *parts: str | bytes) -> bool:
    """Whether `expected` is the MAC of the parts."""
    return isinstance(expected, str) and hmac.compare_digest(expected, mac(*parts))


def _canonical(data: Mapping[str, object]) -> str:
    return json.dumps({k: v for k, v in data.items() if k != MAC_FIELD}, sort_keys=True)


def seal(data: JsonDict, purpose: str) -> JsonDict:
    """`data` with its MAC under `purpose` (which kind of document it is) added."""
    return {**data, MAC_FIELD: mac(purpose, _canonical(data))}


def unseal(data: Any, purpose: str) -> JsonObject | None:
    """The document without its MAC where the MAC holds; None where it is missing or wrong."""
    if not isinstance(data, dict) or not verify(data.get(MAC_FIELD), purpose, _canonical(data)):
        return None
    return {k: v for k, v in data.items() if k != MAC_FIELD}


def mask(value: int, purpose: str) -> int:
    """A 62-bit value XORed into a stored secret (the run's seed), so the file never holds it in clear."""
    return value ^ (int(mac("mask", purpose)[:16], 16) >> 2)
