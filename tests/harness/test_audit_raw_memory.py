"""The audit hook refuses ctypes' raw-memory routes to candidate code, and leaves the judge's own uses alone.

A hook is for good once installed, so each case runs in a fresh interpreter: the candidate's code lives in a
file of its own (whose code is the candidate's by where it lives), the judge's in this package."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CANDIDATE = """
import ctypes

cell = ctypes.c_long(7)


def from_address():
    return ctypes.c_long.from_address(ctypes.addressof(cell)).value


def from_buffer():
    return ctypes.c_long.from_buffer(bytearray(8)).value


def from_buffer_copy():
    return ctypes.c_long.from_buffer_copy(bytes(8)).value


def cast():
    return ctypes.cast(ctypes.addressof(cell), ctypes.POINTER(ctypes.c_long)).contents.value


def string_at():
    return ctypes.string_at(ctypes.addressof(cell), 8)


def memmove():
    ctypes.memmove(ctypes.addressof(cell), ctypes.addressof(cell), 8)


def memset():
    ctypes.memset(ctypes.addressof(cell), 0, 8)


def libc_memcpy():
    return ctypes.CDLL(None).memcpy


def own_cast_function():
    return ctypes._cast_addr


def pointer_argument():
    return ctypes.byref(cell)
"""

RUNNER = """
import importlib.util, json, sys
from pathlib import Path
from cudasmith.harness.workers import audit
path = Path(sys.argv[1])
findings = audit.install(solution=path)
spec = importlib.util.spec_from_file_location("candidate", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
import ctypes
judge_reads = ctypes.c_long.from_address(ctypes.addressof(module.cell)).value  # the judge's own: allowed
outcome = {}
for name in sys.argv[2:]:
    try:
        getattr(module, name)()
        outcome[name] = "ran"
    except Exception as exc:
        outcome[name] = type(exc).__name__
first = findings.first_violation()
print(json.dumps({"outcome": outcome, "first": first[1] if first else None, "judge": judge_reads}))
"""

REFUSED = ["from_address", "from_buffer", "cast", "string_at", "memmove", "memset", "libc_memcpy"]


def _run(tmp_path: Path, *names: str) -> dict[str, object]:
    candidate = tmp_path / "solution.py"
    candidate.write_text(CANDIDATE)
    result = subprocess.run([sys.executable, "-c", RUNNER, str(candidate), *names],
                            capture_output=True, text=True, check=True, timeout=120)  # fmt: skip
    return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", REFUSED)
def test_a_raw_memory_route_of_ctypes_is_refused_to_candidate_code(tmp_path: Path, name: str) -> None:
    report = _run(tmp_path, name)
    assert report["outcome"] == {name: "Refused"}, report
    assert "raw" in str(report["first"]), report


def test_copies_of_its_own_bytes_and_pointers_to_its_own_objects_stay_allowed(tmp_path: Path) -> None:
    """from_buffer_copy copies bytes the candidate holds, byref points at its own object: no raw address."""
    report = _run(tmp_path, "from_buffer_copy", "pointer_argument")
    assert report["outcome"] == {"from_buffer_copy": "ran", "pointer_argument": "ran"}, report
    assert report["first"] is None
    assert report["judge"] == 7


def test_the_addresses_ctypes_builds_its_helpers_from_are_gone(tmp_path: Path) -> None:
    report = _run(tmp_path, "own_cast_function")
    assert report["outcome"] == {"own_cast_function": "AttributeError"}, report
