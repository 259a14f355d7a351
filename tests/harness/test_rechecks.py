"""What a reply owes the parent while the defences are on: the evidence of the judge's checks, and every timed
call's outputs kept (as many as fit) for the draw the parent makes once the worker is stopped. Less is judge
state tampered with, never a verdict reached on less."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cudasmith.harness.wire.messages import TimeSpec
from cudasmith.harness.wire.outputs import Evidence, OutputRef, Timed, TimedCheck
from cudasmith.harness.witnesses.rechecks import kept_enough, missing_evidence
from cudasmith.timing.protocol import Measurement, TimingPlan

SPEC = TimeSpec(0, {}, 1, (11, 12, 13, 14), TimingPlan(), retain_bytes=1024)


def _outputs(count: int) -> list[OutputRef]:
    """`count` outputs of 32 bytes, each in its own range of one arena."""
    return [
        OutputRef("float32", [8], "shm", 32, offset=64 * i, name="cudasmith-t-arena") for i in range(count)
    ]


def _timed(samples: int, kept: list[TimedCheck]) -> Timed:
    measurement = Measurement([1.0] * samples, "perf_counter", TimingPlan())
    return Timed(measurement, input_sets=4, checks=kept, outputs=_outputs(sum(k.n_outputs for k in kept)))


def _kept(calls: range) -> list[TimedCheck]:
    return [TimedCheck(call, call % 4, 1000 + call, 1) for call in calls]


def test_evidence_that_is_missing_or_short_of_its_calls_is_named() -> None:
    assert missing_evidence(Evidence(True, 14, 2, 14), 14, marked=True) is None
    assert "none of the evidence" in str(missing_evidence(None, 1, marked=False))
    assert "not whole" in str(missing_evidence(Evidence(False, 1, 2), 1, marked=False))
    assert "integrity check" in str(missing_evidence(Evidence(True, 0, 2), 1, marked=False))
    assert "no thread" in str(missing_evidence(Evidence(True, 1, 0), 1, marked=False))
    assert "recording" in str(missing_evidence(Evidence(True, 14, 2, 3), 14, marked=True))
    assert (
        missing_evidence(Evidence(True, 14, 2, 0), 14, marked=False) is None
    )  # a GPU's: CUPTI's own records


def test_every_timed_call_kept_where_all_fit_and_as_many_as_fit_otherwise() -> None:
    assert kept_enough(_timed(10, _kept(range(10))), SPEC, output_bytes=32) is None
    emptied = kept_enough(_timed(10, []), SPEC, output_bytes=32)
    assert emptied is not None and "0 timed call(s) kept" in emptied and "not the 10" in emptied
    assert kept_enough(_timed(10, _kept(range(9))), SPEC, output_bytes=32) is not None
    # 1024 bytes hold four outputs of 256: four of ten calls kept is all that was asked for.
    assert kept_enough(_timed(10, _kept(range(0, 10, 3))), SPEC, output_bytes=256) is None


@pytest.mark.parametrize(
    ("kept", "why"),
    [
        ([TimedCheck(3, 3, 7, 1), TimedCheck(3, 3, 8, 1)], "not distinct"),
        ([TimedCheck(12, 0, 7, 1), TimedCheck(3, 3, 8, 1)], "not distinct"),
        ([TimedCheck(2, 2, 7, 1), TimedCheck(3, 3, 7, 1)], "same fresh inputs"),
        ([TimedCheck(2, 9, 7, 1), TimedCheck(3, 3, 8, 1)], "never given"),
    ],
)
def test_kept_calls_that_are_not_what_the_worker_was_asked_for_are_refused(
    kept: list[TimedCheck], why: str
) -> None:
    assert why in str(kept_enough(_timed(10, kept), SPEC, output_bytes=512))


def test_kept_calls_must_account_for_the_outputs() -> None:
    reply = _timed(2, _kept(range(2)))
    short = Timed(reply.measurement, 4, reply.checks, reply.outputs[:1])
    assert "do not account" in str(kept_enough(short, SPEC, output_bytes=32))


def test_two_kept_calls_whose_outputs_share_memory_are_refused() -> None:
    """One right answer referred to by every kept call would pass whichever call is drawn, if calls' inputs
    were alike: each kept call's outputs are copies of their own, so overlapping ranges are a forgery."""
    reply = _timed(3, _kept(range(3)))
    assert kept_enough(reply, SPEC, output_bytes=32) is None
    for overlapping in (replace(reply.outputs[2], offset=16), reply.outputs[0]):
        forged = replace(reply, outputs=[*reply.outputs[:2], overlapping])
        assert "same memory" in str(kept_enough(forged, SPEC, output_bytes=32))
    elsewhere = replace(
        reply, outputs=[*reply.outputs[:2], replace(reply.outputs[0], name="cudasmith-t-other")]
    )
    assert kept_enough(elsewhere, SPEC, output_bytes=32) is None
    ipc = [OutputRef("float32", [8], "cuda_ipc", 32, "ab" * 64, 0, 1024)] * 3
    assert "same memory" in str(kept_enough(replace(reply, outputs=ipc), SPEC, output_bytes=32))


def test_calls_whose_samples_a_gpu_did_not_keep_still_number_the_kept_ones() -> None:
    # On the H200 an honest cold-L2 kernel was refused: where some calls' samples are not kept, the kept
    # calls' numbers run past the samples. The calls made bound them, not the samples.
    measurement = Measurement([1.0] * 9, "cupti", TimingPlan(), discarded=3, calls=12)
    kept = [TimedCheck(call, call % 4, 1000 + call, 1) for call in (0, 4, 11)]
    reply = Timed(measurement, input_sets=4, checks=kept, outputs=_outputs(3))
    assert kept_enough(reply, SPEC, output_bytes=512) is None
    beyond = [*kept[:2], TimedCheck(12, 0, 1012, 1)]
    reply = Timed(measurement, input_sets=4, checks=beyond, outputs=_outputs(3))
    assert "not distinct" in str(kept_enough(reply, SPEC, output_bytes=512))
