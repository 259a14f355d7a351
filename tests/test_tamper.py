"""The worker's tamper check: what it finds, that it runs none of the candidate's code, and that the state it
last accepted stands in for the full comparison only while everything is identical."""

from __future__ import annotations

import json

from cudasmith.harness.tamper import Snapshot, _only_names

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
