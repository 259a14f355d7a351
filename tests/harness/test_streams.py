"""The happens-before graph of a call's GPU work, built from records as CUPTI gives them (made up here: the
graph is logic; the GPU exploit tests judge real calls). Work the caller's stream does not wait for by the
time forward returns is a race however early it ended; so is a stream that waits on itself."""

from __future__ import annotations

from cudasmith.harness.workers.races.streams import (
    CONTEXT_SYNC,
    EVENT_SYNC,
    STREAM_SYNC,
    STREAM_WAIT,
    StreamOp,
    capture_prologue,
    races,
    resolve,
    sync_op,
)
from cudasmith.timing.activity import EVENT_RECORD

CALLER, SIDE, OTHER = 7, 13, 21
RETURNED = 100  # the marker's correlation id, launched on the caller's stream as forward returned


def work(correlation: int, stream: int, name: str = "kernel") -> StreamOp:
    return StreamOp("work", correlation, stream, name)


def wait(correlation: int, stream: int, on: int, recorded_at: int) -> StreamOp:
    return StreamOp(STREAM_WAIT, correlation, stream, STREAM_WAIT, on, recorded_at)


def test_work_on_a_side_stream_never_waited_for_is_a_race_however_early_it_ended() -> None:
    reason = races([work(1, CALLER), work(2, SIDE, "cumsum_kernel")], CALLER, RETURNED)
    assert reason is not None and "unsynchronised side stream" in reason and "cumsum_kernel" in reason


def test_the_caller_waiting_on_an_event_recorded_after_the_side_work_orders_it() -> None:
    ops = [work(1, SIDE), work(2, SIDE), wait(4, CALLER, on=SIDE, recorded_at=3), work(5, CALLER)]
    assert races(ops, CALLER, RETURNED) is None


def test_an_event_recorded_before_the_side_work_does_not_cover_it() -> None:
    ops = [wait(2, CALLER, on=SIDE, recorded_at=1), work(3, SIDE)]
    assert races(ops, CALLER, RETURNED) is not None


def test_host_synchronisations_order_what_they_waited_for() -> None:
    side_work = [work(1, SIDE), work(2, OTHER)]
    stream_sync = [StreamOp(STREAM_SYNC, 3, SIDE, STREAM_SYNC), StreamOp(STREAM_SYNC, 4, OTHER, STREAM_SYNC)]
    assert races([*side_work, *stream_sync], CALLER, RETURNED) is None
    assert races([*side_work, stream_sync[0]], CALLER, RETURNED) is not None, "the other stream is not synced"
    assert races([*side_work, StreamOp(CONTEXT_SYNC, 3, -1, CONTEXT_SYNC)], CALLER, RETURNED) is None
    event = StreamOp(EVENT_SYNC, 4, -1, EVENT_SYNC, SIDE, 3)
    assert races([work(1, SIDE), event], CALLER, RETURNED) is None


def test_waits_are_transitive() -> None:
    ops = [
        work(1, SIDE),
        wait(3, OTHER, on=SIDE, recorded_at=2),
        work(4, OTHER),
        wait(6, CALLER, on=OTHER, recorded_at=5),
    ]
    assert races(ops, CALLER, RETURNED) is None


def test_a_stream_that_waits_on_itself_is_named() -> None:
    ops = [work(1, SIDE), wait(3, SIDE, on=SIDE, recorded_at=2)]
    reason = races(ops, CALLER, RETURNED)
    assert reason is not None and "waits on itself" in reason
    joined_later = [*ops, wait(5, CALLER, on=SIDE, recorded_at=4)]
    assert "waits for nothing" in str(races(joined_later, CALLER, RETURNED)), (
        "a self-wait is named however joined"
    )


def test_only_what_was_issued_before_forward_returned_is_the_call_s() -> None:
    assert races([work(1, CALLER), work(RETURNED + 1, SIDE)], CALLER, RETURNED) is None
    late_wait = [work(1, SIDE), wait(RETURNED + 2, CALLER, on=SIDE, recorded_at=RETURNED + 1)]
    assert races(late_wait, CALLER, RETURNED) is not None


def test_synchronisations_are_read_from_kineto_s_records() -> None:
    metadata = '"cuda_sync_kind": "Stream Wait Event",\n "wait_on_stream": 13, "wait_on_cuda_event_record_corr_id": 41, "wait_on_cuda_event_id": 2,'
    op = sync_op(STREAM_WAIT, 42, 7, metadata)
    assert op == StreamOp(STREAM_WAIT, 42, 7, STREAM_WAIT, 13, 41, event=2)
    assert sync_op(CONTEXT_SYNC, 5, 2**32 - 1, "").stream == -1  # type: ignore[union-attr]
    assert sync_op("cudaLaunchKernel", 5, 7, "") is None
    assert sync_op(STREAM_WAIT, 5, 7, "not json").recorded_at == -1  # type: ignore[union-attr]


def test_every_kind_of_synchronisation_is_known_by_name_where_the_records_carry_it_as_work() -> None:
    # On the H200 (torch 2.11) a stream's wait came through with the activity type of work: it was taken for
    # a kernel that was not the solution's. Both readers of the records know the names as well.
    from cudasmith.harness.workers.races.streams import SYNC_KINDS
    from cudasmith.timing.activity import SYNC_NAMES

    assert set(SYNC_KINDS) == SYNC_NAMES == {STREAM_WAIT, EVENT_SYNC, STREAM_SYNC, CONTEXT_SYNC}


def record(correlation: int, stream: int, event: int) -> StreamOp:
    return StreamOp(EVENT_RECORD, correlation, stream, EVENT_RECORD, event=event)


def event_wait(correlation: int, stream: int, event: int, on: int = -1, recorded_at: int = -1) -> StreamOp:
    return StreamOp(STREAM_WAIT, correlation, stream, STREAM_WAIT, on, recorded_at, event)


def test_an_event_s_record_is_read_from_kineto_s_records() -> None:
    metadata = '"event_id": 9, "stream": 13, "correlation": 40, "device": 0, "context": 1'
    assert sync_op(EVENT_RECORD, 40, 13, metadata) == record(40, SIDE, 9)
    assert sync_op(EVENT_RECORD, 40, 13, "").event == -1  # type: ignore[union-attr]


def test_a_wait_reads_the_last_record_of_its_event_issued_before_it() -> None:
    # Kineto's map named no record (-1), or a later one: the trace's own records of the event decide.
    ops = [
        record(1, SIDE, 9),
        work(2, SIDE),
        record(3, SIDE, 9),
        event_wait(4, CALLER, 9),
        record(6, OTHER, 9),
    ]
    waited = [op for op in resolve(ops) if op.kind == STREAM_WAIT]
    assert (waited[0].recorded_on, waited[0].recorded_at) == (SIDE, 3)
    # Ordered by the second record (after the side work), so the side work is waited for.
    assert races(ops, CALLER, RETURNED) is None
    # The same wait with its event recorded before the side work only: the work is a race.
    early = [record(1, SIDE, 9), work(2, SIDE), event_wait(4, CALLER, 9, on=SIDE, recorded_at=5)]
    assert races(early, CALLER, RETURNED) is not None


def test_a_record_kineto_names_after_the_wait_is_not_the_one_waited_for() -> None:
    # Kineto's map holds the event's latest record as it reads the buffers: one issued after the wait.
    ops = [work(1, SIDE), event_wait(2, CALLER, 9, on=SIDE, recorded_at=3), work(4, CALLER)]
    (waited,) = [op for op in resolve(ops) if op.kind == STREAM_WAIT]
    assert waited.recorded_at == -1
    assert races(ops, CALLER, RETURNED) is not None


def test_a_self_wait_is_found_from_the_event_s_own_record() -> None:
    ops = [work(1, SIDE), record(2, SIDE, 4), event_wait(3, SIDE, 4)]
    reason = races(ops, CALLER, RETURNED)
    assert reason is not None and "waits on itself" in reason


def test_the_graph_engages_only_where_a_wait_s_record_is_read() -> None:
    # forward.py builds the graph only then; on torch 2.11 Kineto names no record (-1) for any wait.
    from cudasmith.harness.workers.forward import waits_read

    assert waits_read([event_wait(4, CALLER, 9, on=SIDE, recorded_at=3)])
    assert not waits_read([event_wait(4, CALLER, 9)]), "Kineto named no record"
    assert not waits_read([event_wait(4, CALLER, 9, on=SIDE, recorded_at=6)]), "a record after the wait"
    assert waits_read([record(2, SIDE, 9), event_wait(4, CALLER, 9)]), "the trace's own record of the event"


def test_side_work_the_records_cannot_order_is_said_to_have_had_only_the_marker() -> None:
    # The verdict then carries a note (correctness.SIDE_STREAMS_UNREAD): on torch 2.11 with the switch off,
    # a side stream that ended early without a wait passes the marker, and the user should know it.
    from cudasmith.harness.workers.forward import side_streams_unread, waits_read
    from cudasmith.timing.activity import Activity

    def ran(stream: int, correlation: int) -> Activity:
        return Activity("k", 10, 20, "kernel", stream, correlation)

    marker = ran(CALLER, RETURNED)
    unread = waits_read([event_wait(4, CALLER, 9)])
    read = waits_read([event_wait(4, CALLER, 9, on=SIDE, recorded_at=3)])
    assert side_streams_unread([ran(CALLER, 1), ran(SIDE, 2)], marker, unread)
    assert not side_streams_unread([ran(CALLER, 1), ran(SIDE, 2)], marker, read), "the graph ordered it"
    assert not side_streams_unread([ran(CALLER, 1)], marker, unread), "no side work"
    assert not side_streams_unread([ran(SIDE, 2)], None, unread), "no marker: no stream to call the caller's"


def test_the_switch_of_event_records_sets_kinetos_teardown_per_stop_by_the_judges_policy() -> None:
    # With CUPTI left attached between recordings, the judge's own cuEventRecord hung under the switch on the
    # H200 and the H100; with a teardown at every stop, the timing's recordings lost samples on the H100. A
    # worker that switches the records takes Kineto's switch over (timing/teardown.py: on between stops, off
    # only for a stop the policy keeps from tearing down); one that does not leaves Kineto alone.
    import os
    import subprocess
    import sys

    code = (
        "import os; from cudasmith.harness.workers import recording; from cudasmith.timing.teardown import "
        "teardowns; print(recording.SWITCH_EVENT_RECORDS, teardowns.policy or '-', os.environ.get('TEARDOWN_CUPTI'))"
    )
    names = ("CUDASMITH_CUDA_EVENT_RECORDS", "TEARDOWN_CUPTI", "CUDASMITH_CUPTI_TEARDOWN")

    def worker(**env: str) -> tuple[int, str]:
        base = {k: v for k, v in os.environ.items() if k not in names}
        done = subprocess.run(
            [sys.executable, "-c", code], env=base | env, capture_output=True, text=True, timeout=300
        )
        return done.returncode, done.stdout.strip() if done.returncode == 0 else done.stderr[-2000:]

    assert worker(CUDASMITH_CUDA_EVENT_RECORDS="1") == (0, "True every 1")
    assert worker(CUDASMITH_CUDA_EVENT_RECORDS="1", TEARDOWN_CUPTI="0") == (0, "True every 1")
    assert worker(CUDASMITH_CUDA_EVENT_RECORDS="1", CUDASMITH_CUPTI_TEARDOWN="events") == (0, "True events 1")
    assert worker(CUDASMITH_CUDA_EVENT_RECORDS="once") == (0, "False - None")  # no longer a switch
    assert worker(CUDASMITH_CUDA_EVENT_RECORDS="0", TEARDOWN_CUPTI="1") == (0, "False - 1"), (
        "the switch off leaves Kineto's own alone"
    )
    assert worker(CUDASMITH_CUDA_EVENT_RECORDS="0") == (0, "False - None")
    assert worker() == (0, "True every 1"), "on by default, since the GPU suite passed under it"
    assert worker(TEARDOWN_CUPTI="0") == (0, "True every 1")
    code_, said = worker(CUDASMITH_CUDA_EVENT_RECORDS="1", CUDASMITH_CUPTI_TEARDOWN="sometimes")
    assert code_ != 0 and "unknown teardown policy 'sometimes'" in said


# ATen's int64 fill, as CUPTI names the kernel of torch's capture prologue.
INT64_FILL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<long>, std::array<char*, 1ul> >"
    "(int, at::native::FillFunctor<long>, std::array<char*, 1ul>)"
)
FLOAT_FILL = INT64_FILL.replace("<long>", "<float>")


def graph_call(side_work: list[StreamOp], graphs: int) -> str | None:
    """A call that captured a CUDA graph on SIDE and replayed it on the caller's stream, as forward.py reads
    it: torch's capture prologue taken out, then the graph."""
    ops = [*side_work, work(10, CALLER, "relu_graphed")]
    prologue = capture_prologue(ops, CALLER, graphs)
    return races([op for op in ops if op.correlation not in prologue], CALLER, RETURNED)


def test_torchs_capture_prologue_is_not_the_calls_work() -> None:
    assert graph_call([work(1, SIDE, INT64_FILL), work(2, SIDE, INT64_FILL)], graphs=1) is None


def test_the_capture_prologues_exception_is_no_wider_than_the_prologue() -> None:
    fills = [work(1, SIDE, INT64_FILL), work(2, SIDE, INT64_FILL)]
    assert graph_call(fills, graphs=0) is not None, "no CUDA graph launched: no prologue"
    assert graph_call([*fills, work(3, SIDE, INT64_FILL)], graphs=1) is not None, (
        "more fills than one prologue"
    )
    assert graph_call([*fills, work(3, SIDE, INT64_FILL)], graphs=2) is None, "two graphs, two prologues"
    assert graph_call([*fills, work(3, SIDE, "relu_kernel")], graphs=1) is not None, (
        "other work on that stream"
    )
    assert graph_call([work(1, SIDE, FLOAT_FILL)], graphs=1) is not None, "a float fill can write an output"
    assert capture_prologue([work(1, CALLER, INT64_FILL)], CALLER, 1) == frozenset()


def test_the_workers_race_check_takes_the_prologue_out_only_where_a_graph_was_launched() -> None:
    from cudasmith.harness.workers.forward import _race
    from cudasmith.timing.activity import Activity

    def activity(name: str, stream: int, correlation: int) -> Activity:
        return Activity(name, 0, 1, "kernel", stream, correlation)

    calls = [
        activity(INT64_FILL, SIDE, 1),
        activity(INT64_FILL, SIDE, 2),
        activity("relu_graphed", CALLER, 10),
    ]
    marker = activity("cudasmith_returned", CALLER, RETURNED)
    canary = [wait(5, CALLER, on=CALLER, recorded_at=4)]
    assert _race(calls, canary, marker, True, graphs=1) is None
    assert _race(calls, canary, marker, True, graphs=0) is not None
