"""`cudasmith ask`: one request to a model, every answer judged; the one-shot form of optimize.

A run directory keeps everything: the prompt, the model's answers (`replay:DIR` serves them again),
each candidate's file, raw answer and verdict, and a summary.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from cudasmith.device import usable_device
from cudasmith.errors import BudgetExhausted, LLMError, UsageError
from cudasmith.harness.runner import EvalOptions
from cudasmith.harness.runner import evaluate as judge
from cudasmith.harness.verdict import Verdict
from cudasmith.llm import (
    LLMClient,
    LLMConfig,
    Request,
    Response,
    Usage,
    load_llm_config,
    make_client,
    request_for,
)
from cudasmith.llm.base import Completion
from cudasmith.llm.replay import RESPONSES_FILE
from cudasmith.search.hardware import Hardware
from cudasmith.search.parsing import ParsedAnswer, parse_answer
from cudasmith.search.prompts import Parent, PromptBuilder
from cudasmith.tasks.problem import Problem
from cudasmith.wording import plural

# Run directories go here unless told otherwise.
RUNS_DIR = Path("runs")
# The status of an answer in which no solution file was found: like source that does not compile.
NO_SOLUTION_STATUS = "compile_error"

Progress = Callable[[str, int, int], None]


@dataclass
class Candidate:
    """One answer of the model: what it cost, the solution found in it, and the judge's verdict."""

    index: int
    completion: Completion
    parsed: ParsedAnswer
    verdict: Verdict
    path: Path | None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        completion = self.completion.to_dict()
        completion.pop("text")
        return {
            "index": self.index,
            "file": None if self.path is None else str(self.path),
            **completion,
            "parse": {"kind": self.parsed.kind, "reason": self.parsed.reason, "notes": self.parsed.notes},
            "verdict": self.verdict.to_dict(),
        }


@dataclass
class AskResult:
    """Everything one `ask` produced."""

    run_dir: Path
    model: str
    task: str
    device: str
    candidates: list[Candidate]
    usage: Usage
    errors: list[str]
    wall_s: float

    @property
    def best(self) -> Candidate | None:
        """The fastest correct candidate (the first correct one when none was timed)."""
        correct = [c for c in self.candidates if c.verdict.correct]
        return max(correct, key=lambda c: c.verdict.speedup or 0.0, default=None)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, as `cudasmith ask --json` prints it and summary.json keeps it."""
        best = self.best
        return {
            "run_dir": str(self.run_dir),
            "model": self.model,
            "task": self.task,
            "device": self.device,
            "best": None if best is None else best.index,
            "usage": asdict(self.usage),
            "errors": self.errors,
            "wall_s": self.wall_s,
            "candidates": [c.to_dict() for c in self.candidates],
        }


def new_run_dir(root: Path, kind: str = "ask") -> Path:
    """A fresh directory `root/kind-YYYYmmdd-HHMMSS-xxxx`."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    path = root / f"{kind}-{stamp}-{secrets.token_hex(2)}"
    path.mkdir(parents=True)
    return path


def no_solution_verdict(problem: Problem, answer_path: Path, device: str, parsed: ParsedAnswer) -> Verdict:
    """The verdict on an answer in which no solution was found."""
    from cudasmith.hardware import device_name

    return Verdict(
        status=NO_SOLUTION_STATUS,
        reason=f"no solution in the answer: {parsed.reason}",
        task=problem.name,
        solution=str(answer_path),
        device=device_name(device),
        dtype=problem.dtype,
        notes=list(parsed.notes),
    )


async def _complete(client: LLMClient, request: Request) -> Response:
    async with client:
        return await client.complete(request)


def load_problem_or_task(problem: Problem | str | Path, problem_dir: str | Path | None = None) -> Problem:
    """A loaded problem, a problem file's path, or a task's name (built-in, or of `problem_dir`)."""
    from cudasmith.tasks.lookup import find_named

    return problem if isinstance(problem, Problem) else find_named(problem, problem_dir)


def ask(
    problem: Problem | str | Path,
    model: str | None = None,
    n: int = 1,
    device: str | None = None,
    config: LLMConfig | None = None,
    options: EvalOptions | None = None,
    runs_dir: str | Path = RUNS_DIR,
    templates: str | Path | None = None,
    parent: Parent | None = None,
    hardware: Hardware | None = None,
    progress: Progress | None = None,
) -> AskResult:
    """Ask `model` for `n` solutions of `problem` (or improvements of `parent`) and judge each on `device`
    (by default the GPU, or the CPU when no GPU is visible: the prompt then asks for C kernels).

    result = cudasmith.ask("level1/softmax", "openai:gpt-5-mini", n=4, device="cpu")
    """
    started = time.monotonic()
    if n < 1:
        raise UsageError("n must be at least 1")
    problem = load_problem_or_task(problem)
    device = usable_device(device)
    config = config or load_llm_config()
    spec = model or config.default_model()
    options = replace(options or EvalOptions(), device=device)
    report = progress or (lambda what, done, total: None)
    client = make_client(spec, config)  # first: a missing key or SDK fails before any work
    prompt = PromptBuilder(templates).build(problem, device, hardware=hardware, parent=parent)
    run_dir = new_run_dir(Path(runs_dir))
    client.record_path = run_dir / RESPONSES_FILE
    (run_dir / "prompt.md").write_text(f"# system\n\n{prompt.system}\n\n# user\n\n{prompt.user}")
    (run_dir / "prompt.json").write_text(json.dumps(prompt.to_dict(), indent=2) + "\n")
    if parent is not None:
        (run_dir / "parent.py").write_text(parent.source)

    report(f"asking {spec} for {plural(n, 'answer')}", 0, n + 1)
    try:
        response = asyncio.run(_complete(client, request_for(prompt.messages(), n, config)))
    except BaseException as exc:
        # A run that got no answer holds only the prompt, which `cudasmith prompt` prints again.
        answered = client.usage.completions > 0
        if not answered:
            shutil.rmtree(run_dir, ignore_errors=True)
        if not isinstance(exc, LLMError):
            raise
        kind = BudgetExhausted if isinstance(exc, BudgetExhausted) else LLMError
        kept = f"the answers so far are kept in {run_dir}" if answered else "no run directory is left"
        raise kind(f"{exc} ({kept})") from None

    candidates = []
    for index, completion in enumerate(response.completions):
        answer_path = run_dir / f"candidate_{index}.response.md"
        answer_path.write_text(completion.text)
        parsed = parse_answer(completion.text, parent.source if parent else None, completion.finish_reason)
        path = None
        if parsed.ok:
            path = run_dir / f"candidate_{index}.py"
            path.write_text(parsed.source or "")

            def step(what: str, done: int, total: int, index: int = index) -> None:
                report(f"judging candidate {index + 1} of {len(response.completions)}: {what}", done, total)

            verdict = judge(path, problem, options, step)
        else:
            verdict = no_solution_verdict(problem, answer_path, device, parsed)
        (run_dir / f"candidate_{index}.verdict.json").write_text(
            json.dumps(verdict.to_dict(), indent=2) + "\n"
        )
        candidates.append(Candidate(index, completion, parsed, verdict, path))

    result = AskResult(
        run_dir=run_dir,
        model=spec,
        task=problem.name,
        device=device,
        candidates=candidates,
        usage=client.usage,
        errors=response.errors,
        wall_s=round(time.monotonic() - started, 3),
    )
    (run_dir / "summary.json").write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    return result
