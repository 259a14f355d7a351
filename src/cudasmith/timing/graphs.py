"""Timing under --graph: each input set's call captured once as a CUDA graph, and the graph replayed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cudasmith.timing import clock
from cudasmith.timing.protocol import TimingError

# Warm-up calls on a side stream before CUDA-graph capture (libraries set up per-stream state then).
GRAPH_WARMUP_CALLS = 2


def graph_replayer(
    run: Callable[[int], Any], n_sets: int, called: Callable[[int | None], None]
) -> Callable[[int], Any]:
    """Capture the call on each input set as a CUDA graph; the result replays graph i for input set i.
    `called(None)` runs first once each call returns, as after a warm-up call (the worker's integrity
    check): inside the capture, before torch ends it (it runs no CUDA work), and a failure of its is raised
    as it is."""
    side = clock.Stream()
    side.wait_stream(clock.current_stream())
    with clock.use_stream(side):
        for index in range(n_sets * GRAPH_WARMUP_CALLS):
            run(index % n_sets)
            called(None)
    clock.current_stream().wait_stream(side)
    graphs, outputs = [], []
    for index in range(n_sets):
        graph = clock.CUDAGraph()
        checking = False
        try:
            with clock.graph_capture(graph):
                output = run(index)
                checking = True
                called(None)
                checking = False
        except Exception as exc:
            if checking:
                raise
            first_line = (str(exc).strip().splitlines() or [""])[0][:300]
            raise TimingError(
                f"the call cannot be captured as a CUDA graph ({type(exc).__name__}: {first_line}); "
                "time it without --graph"
            ) from exc
        outputs.append(output)
        graphs.append(graph)
    clock.cuda_synchronize()

    def replay(index: int) -> Any:
        graphs[index].replay()
        return outputs[index]

    return replay
