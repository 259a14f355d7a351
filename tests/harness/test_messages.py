"""The typed channel between the judge and its workers: every request survives the pipe, a reply is read
field by field against its type (a forged or broken one is refused), and a timing reply's statistics are
the judge's own, recomputed from the raw samples."""

from __future__ import annotations

import json

import pytest

from cudasmith.harness.wire.fields import MalformedMessage, to_wire
from cudasmith.harness.wire.messages import (
    REQUESTS,
    Ack,
    Compare,
    CompareItem,
    Construct,
    Describe,
    Failed,
    InputSpec,
    LoadSolution,
    Run,
    Time,
    TimeSpec,
    read_reply,
    read_request,
    request_header,
)
from cudasmith.harness.wire.outputs import OutputRef, Ran, Timed
from cudasmith.harness.wire.status import Status
from cudasmith.timing.protocol import Measurement, TimingPlan

SPEC = InputSpec(1, {"n": 7}, 11, 12, drawn=True, perturb=3, parameters=True)
TIME = TimeSpec(0, {"n": 7}, 11, (1, 2, 3), TimingPlan(l2_state="hot"), retain_bytes=5, baseline="compile")


def through_the_pipe(header: dict[str, object]) -> dict[str, object]:
    return json.loads(json.dumps(header))


@pytest.mark.parametrize(
    "request_",
    [
        LoadSolution("/x/solution.py", "all"),
        LoadSolution("/x/solution.py", ["aten::add"]),
        Construct(SPEC),
        LoadSolution("/scratch/solution.py", "all", origin="/x/solution.py"),
        Run(SPEC, poison_bytes=4096),
        Run(SPEC, fresh_perturbation=True),
        Time(TIME),
        Describe([{"n": 1}, {}]),
        Compare(
            "token", [CompareItem(SPEC, [OutputRef("float32", [2, 3], "shm", 24, name="cudasmith-token-1")])]
        ),
    ],
    ids=lambda request: type(request).__name__,
)
def test_every_request_arrives_as_it_was_sent(request_: object) -> None:
    header = through_the_pipe(request_header(request_, 7))  # type: ignore[arg-type]
    assert header["id"] == 7 and read_request(header) == request_
    assert set(REQUESTS) >= {"ping", "prepare", "load_solution", "run", "time", "compare", "exit"}


def test_a_reply_of_the_wrong_shape_is_refused_never_taken_on_trust() -> None:
    good = through_the_pipe(
        {"ok": True, **to_wire(Ran([OutputRef("float32", [4], "empty")], {"aten::add": 1}))}
    )
    assert read_reply(Run, good) == Ran([OutputRef("float32", [4], "empty")], {"aten::add": 1})
    for broken in (
        {**good, "outputs": "not a list"},
        {**good, "torch_ops": {"aten::add": "one"}},
        {**good, "own_ns": True},  # a boolean is no count
        {"ok": True},  # no outputs at all
        {**good, "outputs": [{"dtype": "float32", "shape": [4], "kind": "pickle"}]},
    ):
        with pytest.raises(MalformedMessage):
            read_reply(Run, broken)
    assert read_reply(
        Run, {**good, "extra": [1, 2]}
    ).outputs  # what the reader does not ask for is left alone
    assert read_reply(Run, {**good, "perturb": 12345}).perturb == 12345  # a fresh perturbation, said back
    with pytest.raises(MalformedMessage):
        read_reply(Run, {**good, "perturb": "12345"})
    # side work only the marker checked (a caveat the verdict notes), said as a boolean and nothing else
    assert read_reply(Run, {**good, "side_streams_unread": True}).side_streams_unread
    assert not read_reply(Run, good).side_streams_unread
    with pytest.raises(MalformedMessage):
        read_reply(Run, {**good, "side_streams_unread": "yes"})


def test_a_failure_is_its_own_reply_and_a_status_that_is_none_is_a_rejection() -> None:
    failed = read_reply(Construct, {"ok": False, "status": "runtime_error", "reason": "ValueError: x"})
    assert isinstance(failed, Failed) and failed.verdict_status is Status.RUNTIME_ERROR
    forged = read_reply(Construct, {"ok": False, "status": "correct!!", "reason": "trust me"})
    assert forged.verdict_status is Status.REJECTED
    assert read_reply(LoadSolution, {"ok": True}) == Ack()


def test_timing_statistics_are_recomputed_from_the_samples_whatever_the_worker_says() -> None:
    measurement = Measurement([1.0, 2.0, 3.0, 4.0, 100.0], "perf_counter", TimingPlan(), stop="time cap")
    sent = through_the_pipe({"ok": True, **to_wire(Timed(measurement))})
    assert sent["measurement"]["samples_ms"] == [1.0, 2.0, 3.0, 4.0, 100.0]  # type: ignore[index]
    forged = {**sent, "measurement": {**sent["measurement"], "median_ms": 0.001, "ci95_ms": [0.0, 0.001]}}  # type: ignore[dict-item]
    timed = read_reply(Time, forged)
    assert isinstance(timed, Timed) and timed.measurement.median_ms == 3.0
    assert timed.measurement.plan == TimingPlan() and timed.measurement.stop == "time cap"
    with pytest.raises(MalformedMessage):
        read_reply(Time, {**sent, "measurement": {**sent["measurement"], "samples_ms": ["1.0"]}})  # type: ignore[dict-item]
    with pytest.raises(MalformedMessage):  # a plan the protocol does not know
        bad_plan = {**sent["measurement"], "plan": {"l2_state": "lukewarm"}}  # type: ignore[dict-item]
        read_reply(Time, {**sent, "measurement": bad_plan})


def test_an_unknown_request_is_no_request() -> None:
    with pytest.raises(MalformedMessage, match="unknown request"):
        read_request({"op": "eval_anything", "id": 1})


def test_a_timing_reply_without_samples_or_with_forged_sizes_is_malformed_not_a_crash() -> None:
    measurement = Measurement([1.0, 2.0, 3.0], "perf_counter", TimingPlan())
    sent = through_the_pipe({"ok": True, **to_wire(Timed(measurement))})
    for samples in ([], [1.0, float("nan")], [-1.0, 2.0]):
        with pytest.raises(MalformedMessage, match="samples"):
            read_reply(Time, {**sent, "measurement": {**sent["measurement"], "samples_ms": samples}})  # type: ignore[dict-item]
    check = {"call": 0, "set": 0, "perturb": 5, "n_outputs": -1}
    with pytest.raises(MalformedMessage, match="never negative"):
        read_reply(Time, {**sent, "checks": [check]})
    huge = {"dtype": "float32", "shape": [0, 2**70], "kind": "empty"}
    with pytest.raises(MalformedMessage, match="out of range"):
        read_reply(Run, {"ok": True, "outputs": [huge]})
