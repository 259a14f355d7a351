"""Judge.judge_as_done and judge_many without workers: the solutions are taken by a thread of their own,
so an iterable that waits (for a build ahead) holds back no verdict that is done; judge_many restores the
order given; a failing iterable fails the reader."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from cudasmith.harness.session import Judge, in_order


class Judged:
    """What judge_as_done needs of a session: `in_flight` and a thread-safe `judge`."""

    def __init__(self, in_flight: int) -> None:
        self.in_flight = in_flight
        self.judged: list[str] = []
        self._lock = threading.Lock()

    def judge(self, solution: str) -> SimpleNamespace:
        with self._lock:
            self.judged.append(solution)
        return SimpleNamespace(solution=solution)

    def judge_as_done(self, solutions):  # type: ignore[no-untyped-def]
        return Judge.judge_as_done(self, solutions)  # type: ignore[arg-type]

    def judge_many(self, solutions):  # type: ignore[no-untyped-def]
        return Judge.judge_many(self, solutions)  # type: ignore[arg-type]


def test_a_waiting_iterable_holds_back_no_verdict_that_is_done() -> None:
    read = threading.Event()

    def solutions() -> Iterator[str]:
        yield "first"
        # As a solution waiting for its build ahead: the next comes only once the first verdict was read.
        assert read.wait(30), "the first verdict was held back while the iterable waited"
        yield "second"

    session = Judged(in_flight=2)
    got = []
    for position, verdict in session.judge_as_done(solutions()):
        got.append((position, verdict.solution))
        read.set()
    assert got == [(0, "first"), (1, "second")]


def test_judge_many_gives_the_order_of_the_solutions_whatever_order_they_end_in() -> None:
    release = {name: threading.Event() for name in ("a", "b", "c")}

    class Slow(Judged):
        def judge(self, solution: str) -> SimpleNamespace:
            if solution == "a":  # the first ends last
                assert release["a"].wait(30)
            verdict = super().judge(solution)
            if solution == "c":
                release["a"].set()
            return verdict

    session = Slow(in_flight=3)
    assert [v.solution for v in session.judge_many(["a", "b", "c"])] == ["a", "b", "c"]
    done = [pair for pair in Slow(in_flight=3).judge_as_done(["x", "y"])]
    assert sorted(position for position, _ in done) == [0, 1]


def test_no_more_solutions_are_taken_than_feed_ahead_allows() -> None:
    taken = []

    def solutions() -> Iterator[str]:
        for number in range(20):
            taken.append(number)
            yield f"s{number}"

    session = Judged(in_flight=1)
    pairs = session.judge_as_done(solutions())
    next(pairs)
    # One verdict read: at most FEED_AHEAD × in_flight taken beyond it (and the one being offered).
    assert len(taken) <= 2 + 1 + 1
    assert len(list(pairs)) == 19


def test_a_failing_iterable_fails_the_reader_after_the_verdicts_before_it() -> None:
    def solutions() -> Iterator[str]:
        yield "fine"
        raise OSError("the queue could not be read")

    got = []
    with pytest.raises(OSError, match="could not be read"):
        for _, verdict in Judged(in_flight=2).judge_as_done(solutions()):
            got.append(verdict.solution)
    assert got == ["fine"]


def test_in_order_puts_positions_back_in_order() -> None:
    assert list(in_order([(2, "c"), (0, "a"), (1, "b"), (3, "d")])) == ["a", "b", "c", "d"]
    assert list(in_order([(1, "b")])) == [], "nothing before position 0 arrived"
