"""The worker's tamper check: what it finds, that it runs none of the candidate's code, and that the state it
last accepted stands in for the full comparison only while everything is identical."""

from __future__ import annotations

import json
import pathlib
import types
from typing import Any

from cudasmith.harness.workers.tamper import Snapshot, _only_names

ran: list[str] = []


class _Hook(type):
    """A metaclass whose hash and equality are code of its own: a set of the keys' types would run them."""

    def __hash__(cls) -> int:
        ran.append("__hash__")
        return hash(str)

    def __eq__(cls, other: object) -> bool:
        ran.append("__eq__")
        return True


class _Key(metaclass=_Hook):
    pass


def test_a_key_that_is_not_a_name_is_found_without_running_its_code() -> None:
    ran.clear()
    assert _only_names({"a": 1, "b": 2})
    assert not _only_names({"a": 1, _Key(): 2})

    class Name(str):  # a str of another class may compare equal to a name in its own way
        pass

    assert not _only_names({"a": 1, Name("b"): 2})
    assert ran == []


def test_a_key_put_into_a_watched_namespace_is_reported_and_its_code_never_runs() -> None:
    snapshot = Snapshot()
    key = _Key()
    ran.clear()
    vars(json)[key] = None
    try:
        assert snapshot.tampered() == ["json (a key that is not a name)"]
    finally:
        del vars(json)[key]
    assert ran == []
    assert snapshot.tampered() == []


def test_the_accepted_state_stands_in_only_while_everything_is_identical() -> None:
    snapshot = Snapshot()
    assert snapshot.accepted.holds() and snapshot.tampered() == []
    original = json.dumps
    json.dumps = lambda *args, **kwargs: "{}"
    try:
        assert not snapshot.accepted.holds()
        assert snapshot.tampered() == ["json.dumps"]
        assert snapshot.tampered() == ["json.dumps"], "a replacement is not accepted by being seen once"
    finally:
        json.dumps = original
    assert snapshot.accepted.holds() and snapshot.tampered() == []

    # A benign change (a name that is not kept, added) is accepted once the full comparison finds nothing;
    # a replacement after it is still measured against the snapshot.
    json.cudasmith_test_value = 1  # type: ignore[attr-defined]
    try:
        assert not snapshot.accepted.holds()
        assert snapshot.tampered() == []
        assert snapshot.accepted.holds()
        json.loads = lambda *args, **kwargs: {}
        try:
            assert snapshot.tampered() == ["json.loads"]
        finally:
            json.loads = original_loads
    finally:
        del json.cudasmith_test_value  # type: ignore[attr-defined]
    assert snapshot.tampered() == []


original_loads = json.loads


def test_an_entry_added_to_a_class_watched_whole_and_a_module_given_another_class_are_reported() -> None:
    snapshot = Snapshot()
    pathlib.PosixPath.cudasmith_test = None  # type: ignore[attr-defined]
    try:
        assert snapshot.tampered() == ["pathlib.PosixPath.cudasmith_test"]
    finally:
        del pathlib.PosixPath.cudasmith_test  # type: ignore[attr-defined]
    assert snapshot.tampered() == []

    class Module(types.ModuleType):
        pass

    json.__class__ = Module
    try:
        assert snapshot.tampered() == ["json.__class__"]
    finally:
        json.__class__ = types.ModuleType
    assert snapshot.tampered() == []


def test_a_module_imported_after_the_snapshot_is_accepted_as_a_new_key_of_sys_modules() -> None:
    import sys

    snapshot = Snapshot()
    name = "cudasmith_test_module"
    sys.modules[name] = types.ModuleType(name)
    try:
        assert not snapshot.accepted.holds()
        assert snapshot.tampered() == []
        key: Any = _Key()
        ran.clear()
        sys.modules[key] = types.ModuleType("other")
        try:
            assert snapshot.tampered() == ["sys.modules (a key that is not a name)"]
        finally:
            del sys.modules[key]
        assert ran == []
    finally:
        del sys.modules[name]


def test_a_module_swapped_and_a_constant_of_the_judge_changed_are_reported() -> None:
    import cudasmith.harness.workers.calls as calls
    import cudasmith.timing.cuda as sampler

    snapshot = Snapshot()
    swaps = [(json, "decoder", types.SimpleNamespace()), (sampler, "clock", types.SimpleNamespace()),
             (calls, "TIMING_INPUT_SETS", 1)]  # fmt: skip
    for owner, name, value in swaps:
        original = getattr(owner, name)
        setattr(owner, name, value)
        try:
            assert snapshot.tampered() == [f"{owner.__name__}.{name}"]
        finally:
            setattr(owner, name, original)
        assert snapshot.tampered() == []
