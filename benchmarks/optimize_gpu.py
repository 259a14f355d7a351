"""`cudasmith optimize` on the GPU with a scripted model: does the search find the fastest kernel, and
how long does the judge sit idle waiting for answers?

    python benchmarks/optimize_gpu.py [--latency 4] [--task level1/vector_add] [--out DIR]

A replay model (no network, no SDK) serves NVRTC kernels of level1/vector_add, each answer after
`--latency` seconds (a model's latency, simulated): prose, a compile error, a wrong kernel, one block of
threads (very slow), 16 blocks (slow), a full grid (fastest; its block size is declared tunable) and a
cheat (PyTorch doing the work). FSR runs 2 rounds of 4; the run store and the candidates are kept in
DIR (default: a temporary directory). It prints every candidate's verdict, the best kernel with its
ptxas and Nsight Compute facts, the judge's busy time and how long it waited for answers, and exits 0
when the best kernel is the full-grid one (with any of its block sizes), 1 otherwise.

Needs a CUDA GPU, and cudasmith's dependencies: on the workplace's GPU machines pydantic is missing and
travels as wheels (pydantic, pydantic-core, annotated-types, typing-inspection; see the device notes).
Eager PyTorch is the only baseline and each config is checked on one input set, to keep it to minutes.

Screening (--screening): the same search twice, each in a fresh process with compile caches of its own,
over the no-build stream's variants of --task (stream_nobuild.py: 16 NVRTC and Triton kernels, 4 wrong),
answered at once and in the same order: once as `optimize` runs by default (each correct candidate screened
first, only those that could be the best confirmed: harness/confirm.py), once with --confirm-all. It prints
each run's wall time, how many candidates the screen confirmed, the exclusive time of its holds, and its
best kernel; exit 0 when both found the same best kernel (or two within the --confirm-all run's timing
noise of each other, which the line says) and screening took less wall time.

    python benchmarks/optimize_gpu.py --screening --task level1/softmax
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
KERNELS = ROOT / "optimize_gpu_kernels"
# Round 0, then round 1 (seeded by the best of round 0), in the order the model answers.
SCRIPT = (
    "prose",
    "compile_error",
    "wrong",
    "one_block",
    "few_blocks",
    "full_grid",
    "cheat",
    "few_blocks",
)
FASTEST = "add_full_grid"
PROSE = "A vector sum is bound by memory bandwidth: read both inputs once, write the output once."


def answers(latency_s: float) -> list[dict[str, object]]:
    """The scripted answers as replay completions."""
    scripted = []
    for name in SCRIPT:
        text = PROSE if name == "prose" else f"```python\n{(KERNELS / f'{name}.py').read_text()}```"
        scripted.append({"text": text, "finish_reason": "stop", "extra": {"delay_s": latency_s}})
    return scripted


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", help="default: level1/vector_add, or level1/softmax with --screening")
    parser.add_argument(
        "--latency", type=float, help="seconds before each answer (default 4; 0 with --screening)"
    )
    parser.add_argument("--out", type=Path, help="keep the store and candidates here")
    parser.add_argument("--screening", action="store_true", help="screening against --confirm-all (above)")
    parser.add_argument("--one", choices=("screening", "confirm-all"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        sys.exit("needs a CUDA GPU")
    if args.screening or args.one:
        from optimize_screening import compare, one_run

        task, latency = args.task or "level1/softmax", 0.0 if args.latency is None else args.latency
        if args.one:
            return one_run(task, latency, args.one, args.out)
        return compare(task, latency, args.out)
    args.task = args.task or "level1/vector_add"
    args.latency = 4.0 if args.latency is None else args.latency
    out = args.out or Path(tempfile.mkdtemp(prefix="cudasmith-optimize-gpu-"))
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("CUDASMITH_CACHE", str(out / "cache"))
    recording = out / "answers.jsonl"
    recording.write_text("".join(json.dumps(a) + "\n" for a in answers(args.latency)))

    from cudasmith.harness.options import EvalOptions
    from cudasmith.llm import load_llm_config
    from cudasmith.search.config import OptimizeConfig, SearchSettings
    from cudasmith.search.optimize import optimize
    from cudasmith.store import RunStore

    search = OptimizeConfig(strategy="fsr", n=4, depth=2, tunable_trials=2)
    judge = EvalOptions(device="cuda", seeds_per_config=1, baselines=())
    settings = SearchSettings(search, judge, llm=load_llm_config())
    result = optimize(args.task, f"replay:{recording}", settings, store=out / "runs.db")
    summary = result.summary
    print(f"device: {torch.cuda.get_device_name()}; run {result.run_id} in {result.store_path}")
    with RunStore(result.store_path) as store:
        for candidate in store.candidates(result.run_id):
            verdict = candidate.verdict
            speedup = None if verdict is None else verdict.speedup
            shown = "" if speedup is None else f" {speedup:.2f}x eager"
            what = candidate.skipped or ("" if verdict is None else verdict.reason)
            print(
                f"  #{candidate.id} {candidate.key:12} {candidate.status or 'skipped':14}{shown}  {what[:90]}"
            )
        top = summary.best
        best = store.candidate(top.candidate) if top is not None and top.candidate is not None else None
    if best is not None and top is not None:
        print(f"best: #{best.id} {top.speedups}")
        for key in ("ptxas", "profile"):
            if key in best.meta:
                print(f"  {key}: {best.meta[key]}")
    judge, calls = summary.judge, summary.llm.calls if summary.llm else 0
    print(
        f"judging {judge.candidate_s:.1f} s summed over candidates; "
        f"idle waiting for answers {judge.idle_waiting_s:.1f} s "
        f"(answers took {args.latency:g} s each; {calls} calls)"
    )
    found = best is not None and FASTEST in (best.source or "")
    print("the fastest kernel was found" if found else "the fastest kernel was NOT found")
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(main())
