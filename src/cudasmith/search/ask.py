"""`cudasmith ask`: one request to a model, every answer judged; one round of the optimize loop, on the
same run store (`runs/cudasmith.db` by default), its run directory beside the store.

A run directory keeps everything besides: the prompt, the model's answers (`replay:DIR` serves them
again), each candidate's file, raw answer and verdict, and a summary.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import shutil
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from cudasmith.device import usable_device
from cudasmith.errors import BudgetExhausted, LLMError, UsageError
from cudasmith.exec import make_executor
from cudasmith.harness.options import EvalOptions, Progress
from cudasmith.harness.verdict import Verdict
from cudasmith.jsontypes import JsonDict
from cudasmith.llm import LLMConfig, load_llm_config, make_client
from cudasmith.llm.base import Completion
from cudasmith.llm.replay import RESPONSES_FILE
from cudasmith.search.config import OptimizeConfig
from cudasmith.search.driver import drive
from cudasmith.search.ensemble import Ensemble
from cudasmith.search.hardware import Hardware, describe_hardware
from cudasmith.search.judge import cache_key
from cudasmith.search.parsing import ParsedAnswer
from cudasmith.search.prompts import Parent, PromptBuilder
from cudasmith.search.state import Search
from cudasmith.search.strategies import OneShot, SearchContext
from cudasmith.store import RunStore, Usage, default_store_path
from cudasmith.store.db import new_run_id
from cudasmith.store.start import new_run
from cudasmith.tasks.lookup import find_named
from cudasmith.tasks.problem import Problem
from cudasmith.wording import plural


@dataclass
class JudgedAnswer:
    """One answer of the model: what it cost, the solution found in it, and the judge's verdict; or, for
    an answer that repeats an earlier one, why it was skipped (as optimize skips it: never judged)."""

    # Its number, as its files in the run folder (candidate_N.*) and every summary name it.
    candidate: int
    completion: Completion
    parsed: ParsedAnswer
    verdict: Verdict | None
    path: Path | None
    skipped: str | None = None

    @property
    def correct(self) -> bool:
        return self.verdict is not None and self.verdict.correct

    def to_dict(self) -> JsonDict:
        """The JSON form."""
        answer = self.completion
        return {
            "candidate": self.candidate,
            "file": None if self.path is None else str(self.path),
            # The answer's fields but its text (its file holds the code, its response.md the answer).
            "finish_reason": answer.finish_reason,
            "model": answer.model,
            "input_tokens": answer.input_tokens,
            "output_tokens": answer.output_tokens,
            "cost_usd": answer.cost_usd,
            "latency_s": answer.latency_s,
            "extra": answer.extra,
            "parse": {"kind": self.parsed.kind, "reason": self.parsed.reason, "notes": self.parsed.notes},
            "verdict": None if self.verdict is None else self.verdict.to_dict(),
            "skipped": self.skipped,
        }


@dataclass
class AskResult:
    """Everything one `ask` produced."""

    run_dir: Path
    model: str
    task: str
    device: str
    candidates: list[JudgedAnswer]
    usage: Usage
    errors: list[str]
    wall_s: float

    @property
    def best(self) -> JudgedAnswer | None:
        """The fastest correct candidate (the first correct one when none was timed)."""
        correct = [c for c in self.candidates if c.verdict is not None and c.verdict.correct]
        return max(correct, key=lambda c: (c.verdict.speedup if c.verdict else None) or 0.0, default=None)

    def to_dict(self) -> JsonDict:
        """The JSON form, as `cudasmith ask --json` prints it and summary.json keeps it."""
        best = self.best
        return {
            "run_dir": str(self.run_dir),
            "model": self.model,
            "task": self.task,
            "device": self.device,
            "best": None if best is None else best.candidate,
            "usage": asdict(self.usage),
            "errors": self.errors,
            "wall_s": self.wall_s,
            "candidates": [c.to_dict() for c in self.candidates],
        }


def new_run_dir(root: Path, kind: str = "ask") -> Path:
    """A fresh directory `root/kind-YYYYmmdd-HHMMSS-xxxx` (its name is the run's id in the store)."""
    path = root / new_run_id(kind)
    path.mkdir(parents=True)
    return path


def load_problem_or_task(problem: Problem | str | Path, problem_dir: str | Path | None = None) -> Problem:
    """A loaded problem, a problem file's path, or a task's name (built-in, or of `problem_dir`)."""
    return problem if isinstance(problem, Problem) else find_named(problem, problem_dir)


def _candidates(search: Search) -> list[JudgedAnswer]:
    """The run's candidates as `ask` reports them (the driver wrote their files into the run folder)."""
    store, run_id = search.store, search.run.id
    completions = {c.id: c for call in store.calls(run_id, "propose") for c in call.completions}
    found = []
    for record in store.candidates(run_id):
        assert record.completion_id is not None, "every candidate of an ask comes from an answer"
        answer = completions[record.completion_id]
        parse = record.parse
        parsed = ParsedAnswer(
            record.source, parse.get("reason", ""), parse.get("kind", "none"), parse.get("notes", [])
        )
        verdict = record.verdict
        path = None if record.path is None else Path(record.path)
        completion = Completion.from_dict(answer.completion_dict())
        found.append(JudgedAnswer(record.id, completion, parsed, verdict, path, record.skipped))
    return found


def ask(
    problem: Problem | str | Path,
    model: str | None = None,
    n: int = 1,
    device: str | None = None,
    config: LLMConfig | None = None,
    options: EvalOptions | None = None,
    store: str | Path | None = None,
    templates: str | Path | None = None,
    parent: Parent | None = None,
    hardware: Hardware | None = None,
    progress: Progress | None = None,
) -> AskResult:
    """Ask `model` for `n` solutions of `problem` (or improvements of `parent`) and judge each on `device`
    (by default the GPU, or the CPU when no GPU is visible: the prompt then asks for C kernels), into
    the run `store` (default: $CUDASMITH_STORE, else runs/cudasmith.db) and a run directory beside it.
    A run that gets no answer leaves no directory (the store records it as failed).

    result = cudasmith.ask("level1/softmax", "openai:gpt-5-mini", n=4, device="cpu")
    """
    started = time.monotonic()
    if n < 1:
        raise UsageError("n must be at least 1")
    problem = load_problem_or_task(problem)
    device = usable_device(device)
    config = config or load_llm_config()
    spec = model or config.default_model()
    client = make_client(spec, config)  # first: a missing key or SDK fails before any work
    seed = (options.seed if options else None) or secrets.randbits(32)
    options = replace(options or EvalOptions(), device=device, seed=seed)
    report = progress or (lambda what, done, total: None)
    builder = PromptBuilder(templates)
    hardware = hardware or describe_hardware(device)
    prompt = builder.build(problem, device, hardware=hardware, parent=parent)
    store_file = Path(store) if store is not None else default_store_path()
    run_dir = new_run_dir(store_file.parent)
    client.record_path = run_dir / RESPONSES_FILE
    (run_dir / "prompt.md").write_text(f"# system\n\n{prompt.system}\n\n# user\n\n{prompt.user}")
    (run_dir / "prompt.json").write_text(json.dumps(prompt.to_dict(), indent=2) + "\n")
    if parent is not None:
        (run_dir / "parent.py").write_text(parent.source)
    settings = OptimizeConfig(n=n, tunable_trials=0, profile=False)
    run_store = RunStore(store_file)
    run = run_store.create_run(
        new_run(
            "ask",
            problem.name,
            problem.source_hash,
            device,
            seed,
            problem_path=str(problem.path),
            strategy="one-shot",
            models=[spec],
            options={"search": settings.model_dump(mode="json"), "budget_usd": config.budget_usd},
            directory=str(run_dir),
            id=run_dir.name,
        )
    )
    context = SearchContext(problem, device, builder, hardware, settings, seed, tunables=False)
    report(f"asking {spec} for {plural(n, 'answer')}", 0, n + 1)

    def judged(snapshot: Any) -> None:
        report(f"judged {snapshot.judged} of {plural(n, 'answer')}", snapshot.judged, n + 1)

    with make_executor("local", device, in_flight=options.in_flight) as executor:
        search = Search(
            store=run_store,
            run=run,
            strategy=OneShot(context, parent),
            context=context,
            clients={spec: client},
            budget=client.budget,
            ensemble=Ensemble([spec]),
            llm_config=config,
            executor=executor,
            options=options,
            cache_key=cache_key(problem, options, run.device_name),
            run_dir=run_dir,
            on_change=judged,
        )
        outcome = asyncio.run(drive(search))
    candidates = _candidates(search)
    if not candidates and outcome.failures:
        # A run that got no answer holds only the prompt, which `cudasmith prompt` prints again.
        failure = outcome.failures[0]
        run_store.update_run(run.id, status="failed", stop_reason=f"{failure}"[:500])
        run_store.close()
        shutil.rmtree(run_dir, ignore_errors=True)
        kind = BudgetExhausted if isinstance(failure, BudgetExhausted) else LLMError
        raise kind(f"{failure} (no run directory is left)")
    run_store.update_run(run.id, status="finished", stop_reason=outcome.stop_reason)
    result = AskResult(
        run_dir=run_dir,
        model=spec,
        task=problem.name,
        device=device,
        candidates=candidates,
        usage=client.usage,
        errors=outcome.errors,
        wall_s=round(time.monotonic() - started, 3),
    )
    (run_dir / "summary.json").write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    return result
