"""Prompts: the task, the hardware, the rules, the solution contract, and when refining the parent's code
with what the judge said of it. Each section is a template file; a user's directory can replace any.

Templates use `$name` placeholders (string.Template; `$$` is a dollar sign). Prompts show public
configs only: the reference source is shown without HIDDEN_CONFIGS, and a prompt that would still
show a hidden config is refused.
"""

from __future__ import annotations

import ast
import json
import string
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from cudasmith.errors import ProblemError, UsageError
from cudasmith.harness.options import SEEDS_PER_CONFIG
from cudasmith.harness.verdict import Verdict
from cudasmith.harness.workers.check import CALIBRATION_FACTOR, tolerance_for
from cudasmith.llm.base import Message
from cudasmith.llm.config import read_config_table
from cudasmith.runtime.cpu import DEFAULT_FLAGS
from cudasmith.search.feedback import verdict_feedback
from cudasmith.search.hardware import Hardware, describe_hardware
from cudasmith.store.shapes import StoredMessage
from cudasmith.tasks.hidden import is_drawn
from cudasmith.tasks.problem import FLOAT_DTYPES, Config, Problem, load_module

TEMPLATES_DIR = Path(__file__).parent / "templates"
# Said under the configs of a problem that has hidden ones, and only then.
HIDDEN_CONFIGS_LINE = (
    "Hidden configs ({count}) with other sizes (odd ones included) are checked too: handle every valid shape."
)
# The sections of the user message, in order; `contract` is contract_cuda or contract_cpu by device.
FIRST_SECTIONS = ("task", "hardware", "rules", "contract", "answer")
REFINE_SECTIONS = ("task", "hardware", "rules", "contract", "refine")
# What the model is asked to do with a parent, by the parent's verdict.
INSTRUCTIONS = {
    "correct": "It is correct{speed}. Make it faster and keep it correct: find what limits it (memory "
    "traffic, occupancy, synchronisation, instruction count) against the hardware above and remove it.",
    "incorrect": "It computes a wrong answer. Find the bug from the mismatch report and fix it; keep what is fast.",
    "compile_error": "It does not compile. Fix the error; keep the design if it is sound.",
    "runtime_error": "It fails when run. Fix the cause; keep the design if it is sound.",
    "timeout": "It did not finish in time. Look for endless loops, deadlocks and launches that never end.",
    "rejected": "It broke a rule above. Do the work in your own kernels, within the rules.",
}


@dataclass(frozen=True)
class Parent:
    """A solution to improve, the judge's verdict on it, and what the hardware said of it (ptxas
    resources, Nsight Compute metrics), one fact per line."""

    source: str
    verdict: Verdict
    facts: tuple[str, ...] = ()

    def feedback(self) -> str:
        """The verdict as feedback, then the hardware's facts."""
        text = verdict_feedback(self.verdict)
        return text + ("\n\n" + "\n".join(self.facts) if self.facts else "")


@dataclass(frozen=True)
class Prompt:
    """A system message and a user message."""

    system: str
    user: str

    def messages(self) -> tuple[Message, ...]:
        """The prompt as chat messages."""
        return (Message("system", self.system), Message("user", self.user))

    def to_dict(self) -> dict[str, list[StoredMessage]]:
        """The JSON form: the messages."""
        return {"messages": [StoredMessage(role=m.role, content=m.content) for m in self.messages()]}


def public_source(problem: Problem) -> str:
    """The problem's source without its HIDDEN_CONFIGS assignment."""
    lines = problem.source.splitlines(keepends=True)
    try:
        tree = ast.parse(problem.source)
    except SyntaxError:
        return problem.source
    for node in reversed(tree.body):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == "HIDDEN_CONFIGS" for t in targets):
            del lines[node.lineno - 1 : node.end_lineno]
    return "".join(lines).strip("\n")


def _describe_inputs(module: Any, config: Config) -> str | None:
    """'x: float32[8, 1000]' for each forward argument, from a run of get_inputs on meta tensors."""
    import inspect

    import torch

    try:
        with torch.device("meta"):
            inputs = module.get_inputs(**config)
        names = [p for p in inspect.signature(module.Model.forward).parameters if p != "self"]
    except Exception:  # a get_inputs that needs real data: the config alone is shown
        return None
    if len(names) != len(inputs):
        names = [f"argument {index}" for index in range(len(inputs))]
    described = []
    for name, value in zip(names, inputs, strict=True):
        if isinstance(value, torch.Tensor):
            described.append(f"{name}: {str(value.dtype).removeprefix('torch.')}{list(value.shape)}")
        else:
            described.append(f"{name}: {type(value).__name__} {value!r}")
    return ", ".join(described)


def configs_block(problem: Problem) -> str:
    """How inputs are made, one line per public config with its input shapes where they can be worked
    out, and, only when the problem has hidden configs, that they exist."""
    try:
        module = load_module(problem.path, "problem")
    except Exception:
        module = None
    if problem.configs == ({},):
        shapes = _describe_inputs(module, {}) if module is not None else None
        lines = [
            "`get_init_inputs()` gives the constructor's arguments and `get_inputs()` the arguments of "
            "`forward`" + (f": inputs {shapes}." if shapes else ".")
        ]
    else:
        lines = [
            "`get_init_inputs(**config)` gives the constructor's arguments and `get_inputs(**config)` the "
            "arguments of `forward`, for each config:",
            "",
        ]
        for index, config in enumerate(problem.configs):
            shapes = _describe_inputs(module, config) if module is not None else None
            lines.append(
                f"- config {index}: `{json.dumps(config)}`" + (f": inputs {shapes}" if shapes else "")
            )
    if problem.hidden_configs:
        lines += ["", HIDDEN_CONFIGS_LINE.format(count=len(problem.hidden_configs))]
    return "\n".join(lines)


def shape_texts(problem: Problem) -> dict[str, str]:
    """What the system prompt and the rules say about shapes: hidden configs are promised only where the
    problem has them (a KernelBench file has none)."""
    if problem.hidden_configs:
        return {
            "checked_shapes": "every shape (some shapes are hidden from you)",
            "shape_rule": "No special cases for the shapes shown: hidden configs use others.",
        }
    return {
        "checked_shapes": "the shapes shown",
        "shape_rule": "No special cases for the shapes shown: the code must hold for any valid shape.",
    }


def correctness_block(problem: Problem) -> str:
    """How outputs are compared, with the thresholds that apply to this problem."""
    dtype = problem.dtype or "float32"
    lines = [
        f"- dtype: {problem.dtype or 'that of the reference outputs'}; compute in it or in a higher precision.",
        f"- Every config is checked on {SEEDS_PER_CONFIG} input sets drawn from a secret seed.",
    ]
    if problem.has_validate:
        # The harness then judges by the validator alone, after checking count, shapes and dtypes.
        lines.append(
            "- Outputs must have the reference's shapes and dtypes; then the task's own validator judges "
            "them: any answer it accepts is correct (it need not equal the reference's)."
        )
    elif problem.dtype is not None and problem.dtype not in FLOAT_DTYPES:
        lines.append("- Outputs must equal the reference's exactly.")
    else:
        tol = tolerance_for(getattr(torch, dtype), problem.tolerance)
        lines += [
            f"- Outputs are compared with a float64 reference. Element-wise: |got - expected| <= "
            f"rtol*|expected| + atol*rms(expected) with rtol = {tol['rtol']:g}, atol = {tol['atol']:g}; "
            f"normwise: ||got - expected|| / ||expected|| <= {tol['norm']:g}"
            + ("" if problem.dtype else " (float32 thresholds; other dtypes have their own)")
            + ".",
            f"- Both bounds widen to {CALIBRATION_FACTOR:g}x the error that the PyTorch reference itself "
            f"makes in {dtype}: a different summation order passes, a lower precision does not.",
            "- NaN and Inf must appear exactly where the reference has them.",
        ]
    return "\n".join(lines)


def _instruction(verdict: Verdict) -> str:
    speed = f" and runs at {verdict.speedup:.2f}x {verdict.baseline}" if verdict.speedup else ""
    return INSTRUCTIONS.get(verdict.status, INSTRUCTIONS["runtime_error"]).format(speed=speed)


class PromptBuilder:
    """Renders prompts from the package's templates, each replaceable by a file of the same name in
    `templates_dir`."""

    def __init__(self, templates_dir: str | Path | None = None) -> None:
        self.templates_dir = Path(templates_dir) if templates_dir is not None else None
        if self.templates_dir is not None and not self.templates_dir.is_dir():
            raise UsageError(f"templates directory not found: {self.templates_dir}")
        self._task_values: dict[tuple[Any, ...], dict[str, str]] = {}

    def template_path(self, name: str) -> Path:
        """The file that holds template `name`: the user's if there is one, else the package's."""
        if self.templates_dir is not None and (self.templates_dir / f"{name}.md").is_file():
            return self.templates_dir / f"{name}.md"
        return TEMPLATES_DIR / f"{name}.md"

    def render(self, name: str, values: dict[str, str]) -> str:
        """Template `name` with its placeholders filled; a UsageError names a placeholder we lack."""
        path = self.template_path(name)
        try:
            return string.Template(path.read_text()).substitute(values).strip()
        except KeyError as exc:
            raise UsageError(
                f"template {path}: unknown placeholder ${exc.args[0]}; known: {', '.join(sorted(values))}"
            ) from None
        except ValueError as exc:
            raise UsageError(f"template {path}: {exc} (write $$ for a dollar sign)") from None

    def task_values(self, problem: Problem, device: str, hardware: Hardware | None = None) -> dict[str, str]:
        """The placeholders every template may use: the task, its correctness rules and the hardware.
        Kept per problem and device, since a search builds hundreds of prompts for one task."""
        hardware = hardware or describe_hardware(device)
        key = (problem.name, problem.source_hash, device, hardware)
        if key not in self._task_values:
            self._task_values[key] = {
                "task_name": problem.name,
                "description": problem.description or "(no description: the reference says what it computes)",
                "reference_source": public_source(problem),
                "configs": configs_block(problem),
                **shape_texts(problem),
                "correctness": correctness_block(problem),
                "hardware": hardware.block(),
                "device_name": hardware.name,
                "kernel_language": "CUDA" if device.startswith("cuda") else "C",
                "arch": hardware.target or "the GPU's architecture",
                "compile_flags": " ".join(DEFAULT_FLAGS),
            }
        return self._task_values[key]

    def build(
        self,
        problem: Problem,
        device: str,
        hardware: Hardware | None = None,
        parent: Parent | None = None,
        extras: Sequence[tuple[str, dict[str, str]]] = (),
    ) -> Prompt:
        """The prompt for a first attempt at `problem` on `device`, or for improving `parent`.

        `extras` are more sections, each a template name and its own values, put before the last section
        (what to do): a search's other attempts, inspirations, tunables."""
        gpu = device.startswith("cuda")
        values = dict(self.task_values(problem, device, hardware))
        if parent is not None:
            values.update(
                parent_source=parent.source.strip("\n"),
                feedback=parent.feedback(),
                instruction=_instruction(parent.verdict),
            )
        sections = REFINE_SECTIONS if parent is not None else FIRST_SECTIONS
        names = [("contract_cuda" if gpu else "contract_cpu") if s == "contract" else s for s in sections]
        parts = [self.render(n, values) for n in names]
        parts[-1:-1] = [self.render(name, {**values, **own}) for name, own in extras]
        prompt = Prompt(system=self.render("system", values), user="\n\n".join(parts) + "\n")
        _refuse_hidden_configs(problem, prompt)
        return prompt


def templates_from_config(explicit: str | Path | None = None) -> Path | None:
    """The templates directory named by `[prompts] templates` in cudasmith.toml (relative to that file)."""
    table, path = read_config_table("prompts", explicit)
    unknown = set(table) - {"templates"}
    if unknown:
        raise UsageError(f"{path}: prompts.{sorted(unknown)[0]}: not a setting (known: templates)")
    if "templates" not in table:
        return None
    if not isinstance(table["templates"], str):
        raise UsageError(f"{path}: prompts.templates must be a directory path")
    assert path is not None
    return path.parent / table["templates"]


def _refuse_hidden_configs(problem: Problem, prompt: Prompt) -> None:
    text = prompt.system + prompt.user
    for config in problem.hidden_configs:
        if config in problem.configs or not config or is_drawn(config):  # a drawn one has no fixed shape
            continue
        if json.dumps(config) in text or repr(config) in text:
            raise ProblemError(
                f"{problem.path}: the prompt would show a hidden config; keep them in HIDDEN_CONFIGS only"
            )
