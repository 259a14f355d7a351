"""Runs written into a store the way bench and optimize write them, with verdicts made by the Verdict
dataclass (so their JSON is the judge's): for the report, leaderboard and export tests, which need
known numbers without judging anything."""

from __future__ import annotations

from typing import Any

from cudasmith.device import DevicePeaks
from cudasmith.harness.verdict import ConfigResult, Verdict
from cudasmith.harness.wire.results import BaselineEntry
from cudasmith.harness.wire.status import Rule, Status
from cudasmith.harness.witnesses.roofline import Roofline
from cudasmith.store import CacheKey, Run, RunStore, code_hash

DEVICE = "NVIDIA H200 (test)"
PEAKS = {
    "device": DEVICE,
    "kind": "cuda",
    "memory_gb_per_s": 4000.0,
    "matrix_tflops": {"bfloat16": 700.0, "float32": 50.0},
    "vector_tflops": {"float32": 60.0},
    "cache_bytes": 60 * 2**20,
}
# (flops, bytes) of each task's configs, and the eager and torch.compile times (ms) on them.
WORK = {"level1/relu": [(1e6, 8e6), (4e7, 3.2e8)], "level1/matmul": [(2e9, 1.2e7), (1.6e10, 4.8e7)]}
BASELINE_MS = {"eager": 0.01, "compile": 0.008}


def verdict(
    task: str, status: str, speed: float = 1.0, reason: str = "", rule: Rule | None = None
) -> Verdict:
    """A verdict on `task`; when correct, every config `speed` times faster than eager PyTorch."""
    configs = []
    for index, (flops, moved) in enumerate(WORK[task]):
        scale = moved / 8e6 if task == "level1/relu" else flops / 2e8
        time_ms = BASELINE_MS["eager"] * scale / speed
        sol_ms = max(moved / 4e9, flops / 5e10)
        result = ConfigResult(index=index, config={"n": index}, hidden=index == 1, status=status)
        if status == "correct":
            result.time_ms, result.baseline_ms, result.speedup = time_ms, BASELINE_MS["eager"] * scale, speed
            result.roofline = Roofline.from_dict(
                {"flops": flops, "bytes": moved, "sol_ms": sol_ms, "floor_ms": sol_ms / 2}
            )
            result.sol_pct = 100 * sol_ms / time_ms
            result.baselines = {
                name: BaselineEntry(
                    time_ms=ms * scale, speedup=ms * scale / time_ms, sol_pct=100 * sol_ms / (ms * scale)
                )
                for name, ms in BASELINE_MS.items()
            }
        configs.append(result)
    speedups = (
        {n: BASELINE_MS[n] / BASELINE_MS["eager"] * speed for n in BASELINE_MS} if status == "correct" else {}
    )
    known = Status(status)
    return Verdict(
        status=known,
        reason=reason or status,
        rule=rule or Rule.of_status(known),
        task=task,
        solution="x.py",
        device=DEVICE,
        speedup=speedups.get("eager"),
        speedups=speedups,
        configs=configs,
        peaks=DevicePeaks.from_dict(PEAKS) if status == "correct" else None,
    )


def _run(store: RunStore, **fields: Any) -> Run:
    base = {"task_version": "v", "device": "cuda", "device_name": DEVICE, "harness_version": "h"}
    return store.create_run(Run(**{**base, **fields}))


# The bench of files: (task, status, speedup, reason, what KernelBench claimed, the rule broken).
FOLDER = [
    ("level1/relu", "correct", 2.5, "", True, None),
    ("level1/relu", "rejected", 1.0, "config 0: input 0 was modified by forward", True, Rule.INPUT_MUTATION),
    ("level1/matmul", "correct", 0.8, "", True, None),
    (
        "level1/matmul",
        "rejected",
        1.0,
        "config 0: PyTorch operator aten::mm called inside forward (1x)",
        True,
        Rule.PYTORCH_COMPUTE,
    ),
    ("level1/matmul", "incorrect", 1.0, "config 0: 12 of 64 values differ", False, None),
]


def bench_of_files(store: RunStore) -> str:
    """A bench over five files for two tasks; returns its run id."""
    run = _run(store, kind="bench", task="level1 (2 tasks)", strategy="folder")
    key = CacheKey("v", DEVICE, "h", "o")
    for index, (task, status, speed, reason, claimed, rule) in enumerate(FOLDER):
        source = f"# {index}"
        meta = {"task": task, "sample": index, "claimed_correct": claimed}
        candidate = store.add_candidate(
            run.id,
            f"{task}#{index}",
            "file",
            source=source,
            code_hash=code_hash(source),
            path=f"{index}.py",
            meta=meta,
        )
        store.record_verdict(
            candidate.id, verdict(task, status, speed, reason, rule), key, candidate.code_hash, run.id
        )
    store.update_run(run.id, status="finished")
    return run.id


def search(store: RunStore, cost_per_answer: float | None = 0.01) -> str:
    """A three-round search on level1/relu, each round refining the last, one answer per round; each
    answer costs `cost_per_answer` US dollars (None: unknown price). Returns the run id."""
    run = _run(store, kind="optimize", task="level1/relu", strategy="fsr", models=["openai:fake"])
    key = CacheKey("v", DEVICE, "h", "o")
    parents: list[int] = []
    for round_, (status, speed) in enumerate((("incorrect", 1.0), ("correct", 1.5), ("correct", 3.0))):
        messages = [{"role": "system", "content": "rules"}, {"role": "user", "content": f"prompt {round_}"}]
        call = store.start_call(
            run.id, f"r{round_}", "propose", "openai:fake", {"messages": messages, "n": 1}, {}
        )
        answer = f"answer {round_}\n```python\ncode {round_}\n```"
        store.finish_call(call.id, [{"text": answer, "model": "fake", "cost_usd": cost_per_answer}])
        completion = store.call(run.id, f"r{round_}").completions[0]  # type: ignore[union-attr]
        candidate = store.add_candidate(
            run.id,
            f"r{round_}/0",
            "llm",
            round=round_,
            operator="refine" if parents else "first",
            parents=parents[-1:],
            completion_id=completion.id,
            source=f"code {round_}",
            code_hash=code_hash(f"code {round_}"),
        )
        store.record_verdict(
            candidate.id, verdict("level1/relu", status, speed), key, candidate.code_hash, run.id
        )
        parents.append(candidate.id)
    store.update_run(run.id, status="finished")
    return run.id
