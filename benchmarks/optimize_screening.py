"""optimize_gpu.py --screening: `optimize` with its screen (harness/confirm.py) against `--confirm-all`, on
the no-build stream's variants of one task, answered by a replayed model in the same order both times.

Each run is a process of its own with compile caches of its own (the device's measured facts copied in, as
throughput.py does), so that neither finds the other's builds; the screening run goes first, so a machine
that warms up favours --confirm-all. What each run prints is one JSON line (`one_run`); `compare` reads
both and prints them side by side.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from child_processes import last_json, run_process, tail
from stream_nobuild import RECIPES
from stream_variants import write_kind
from throughput_report import fresh_caches

from cudasmith.store.metrics import screened_only

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# FSR rounds of this many candidates; every round runs (patience as long as the search), and no answer is
# skipped as a near duplicate: variants differ by a constant.
PER_ROUND = 4
RUN_LIMIT_S = 600.0
DEVICE_FACTS_LIMIT_S = 300.0


def _variants(task: str, folder: Path) -> list[str]:
    """The sources of the no-build stream's variants of `task`, in stream order."""
    if task not in RECIPES:
        raise SystemExit(f"the no-build stream has no {task}; it has {', '.join(RECIPES)}")
    expected = write_kind(folder, "nobuild", (task,))
    return [(folder / name).read_text() for name in expected]


def one_run(task: str, latency_s: float, mode: str, out: Path | None) -> int:
    """One search (`mode`: screening or confirm-all) in this process, on the GPU; prints its figures as a
    JSON line."""
    folder = out or Path(tempfile.mkdtemp(prefix=f"cudasmith-screening-{mode}-"))
    sources = _variants(task, folder / "stream")
    print(json.dumps(search_once(task, sources, latency_s, mode, folder, "cuda")), flush=True)
    return 0


def search_once(
    task: str | Path,
    sources: list[str],
    latency_s: float,
    mode: str,
    folder: Path,
    device: str,
    judge_factory: Any = None,
) -> dict[str, Any]:
    """An FSR search whose model answers `sources` in order (replayed), screening or not (`mode`); its wall
    time, verdict counts, hold times and best kernel (`judge_factory`: a scripted judge, for tests)."""
    from cudasmith.harness.options import EvalOptions
    from cudasmith.llm import load_llm_config
    from cudasmith.search.config import OptimizeConfig, SearchSettings
    from cudasmith.search.optimize import optimize
    from cudasmith.store import RunStore

    recording = folder / "answers.jsonl"
    answers = [
        {"text": f"```python\n{s}```", "finish_reason": "stop", "extra": {"delay_s": latency_s}}
        for s in sources
    ]
    recording.write_text("".join(json.dumps(a) + "\n" for a in answers))
    depth = math.ceil(len(sources) / PER_ROUND)
    config = OptimizeConfig(
        strategy="fsr",
        n=PER_ROUND,
        depth=depth,
        patience=depth,
        tunable_trials=0,
        novelty_threshold=1.0,
        profile=False,
        confirm_all=mode == "confirm-all",
    )
    began = time.monotonic()
    judge = EvalOptions(device=device, seeds_per_config=1, baselines=("eager",))
    settings = SearchSettings(search=config, judge=judge, llm=load_llm_config())
    result = optimize(
        task, f"replay:{recording}", settings, store=folder / "runs.db", judge_factory=judge_factory
    )
    wall_s = time.monotonic() - began
    with RunStore(result.store_path) as store:
        candidates = [c for c in store.candidates(result.run_id) if c.verdict]
    verdicts = [(c, c.verdict) for c in candidates if c.verdict is not None]
    timing = [v.timing for _, v in verdicts if v.timing is not None]
    timed = [(c, v) for c, v in verdicts if v.speedup]
    best = result.summary.best
    top = next((c for c in candidates if best is not None and c.id == best.candidate), None)
    return {
        "mode": mode,
        "wall_s": round(wall_s, 2),
        "judged": len(candidates),
        "correct": sum(c.status == "correct" for c in candidates),
        "confirmed": len(timed),
        "screened_only": sum(screened_only(v) for _, v in verdicts),
        "held_s": round(sum(t.held_s or 0.0 for t in timing), 2),
        "requests_s": round(sum(t.requests_s or 0.0 for t in timing), 2),
        "best": None if top is None else _name(top.source),
        "best_speedup": result.summary.best_speedup,
        "speedups": {_name(c.source): v.speedup for c, v in timed},
        "ranges": {_name(c.source): v.speedup_ci95 for c, v in timed},
    }


def _name(source: str | None) -> str:
    """A variant's name from its first line ('# Stream variant 7 of level1/softmax/triton_rows.py (no_shift)')."""
    first = (source or "").partition("\n")[0]
    return first.removeprefix("# Stream variant ").strip() or "?"


def compare(task: str, latency_s: float, out: Path | None) -> int:
    """Both runs, each in a fresh process; their figures side by side; 0 when screening found the same best
    kernel (or one within the other run's noise of it) in less wall time."""
    from cudasmith.runtime.cache import cache_dir

    root = out or Path(tempfile.mkdtemp(prefix="cudasmith-screening-"))
    pythonpath = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, PYTHONPATH=pythonpath, PYTHONUNBUFFERED="1")
    command = [sys.executable, "-m", "cudasmith", "device", "--json", "--device", "cuda"]
    rc, _, err, seconds = run_process(command, env, DEVICE_FACTS_LIMIT_S)
    print(
        f"device facts (cudasmith device, once, in neither run): {seconds:.1f} s"
        + ("" if rc == 0 else f", FAILED: {tail(err)}"),
        flush=True,
    )
    runs: dict[str, dict[str, Any]] = {}
    for mode in ("screening", "confirm-all"):
        folder = root / mode
        caches = fresh_caches(folder, cache_dir("device"))
        command = [sys.executable, str(HERE / "optimize_gpu.py"), "--one", mode, "--task", task]
        command += ["--latency", str(latency_s), "--out", str(folder)]
        rc, stdout, err, seconds = run_process(command, {**env, **caches}, RUN_LIMIT_S)
        found = last_json(stdout)
        if found is None:
            print(f"{mode}: no figures (exit {rc}, {seconds:.0f} s): {tail(err, 5)}", flush=True)
            return 1
        runs[mode] = found
        print(
            f"{mode}: {found['judged']} judged ({found['correct']} correct, {found['confirmed']} timed in full, "
            f"{found['screened_only']} screened only) in {found['wall_s']:.1f} s; holds {found['held_s']:.1f} s, "
            f"their timed requests {found['requests_s']:.1f} s; best {found['best']} at "
            f"{found['best_speedup'] or 0:.3f}x eager PyTorch",
            flush=True,
        )
    return verdict(runs["screening"], runs["confirm-all"])


def verdict(screening: dict[str, Any], everything: dict[str, Any]) -> int:
    """The comparison's line and exit code (0: same best, or a tie within noise, and less wall time)."""
    saved = everything["wall_s"] - screening["wall_s"]
    same = screening["best"] == everything["best"]
    tie = ""
    if not same and screening["best"] in everything["ranges"]:
        low, high = everything["ranges"][screening["best"]] or (0.0, 0.0)
        best_low, _ = everything["ranges"].get(everything["best"]) or (math.inf, 0.0)
        if high >= best_low:
            tie = f" (a tie within noise: {screening['best']} reached {low:.3f}x to {high:.3f}x in the --confirm-all run)"
    found = (
        "the same best kernel"
        if same
        else ("a best kernel within noise" + tie if tie else "a DIFFERENT best kernel")
    )
    print(
        f"screening found {found} in {screening['wall_s']:.1f} s against {everything['wall_s']:.1f} s with --confirm-all: "
        f"{saved:+.1f} s ({saved / everything['wall_s']:+.0%} of the wall time saved); exclusive time "
        f"{screening['requests_s']:.1f} s against {everything['requests_s']:.1f} s",
        flush=True,
    )
    return 0 if (same or tie) and saved > 0 else 1
