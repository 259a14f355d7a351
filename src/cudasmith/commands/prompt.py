"""`cudasmith prompt`: the prompt that `ask` would send, printed instead."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cudasmith.commands.bundle import bundled
from cudasmith.commands.common import command_device
from cudasmith.commands.options import (
    ConfigOption,
    DeviceOption,
    JsonOption,
    ParentOption,
    TaskFlags,
    TemplatesOption,
    VerdictOption,
    for_a_task,
)
from cudasmith.errors import UsageError

if TYPE_CHECKING:
    from cudasmith.search.prompts import Parent


@dataclass(frozen=True)
class PromptFlags:
    """What the prompt flags of a command said: a solution to improve and its verdict, the templates,
    the settings file."""

    parent: ParentOption = None
    verdict: VerdictOption = None
    templates: TemplatesOption = None
    config: ConfigOption = None

    def parent_solution(self) -> Parent | None:
        """The solution to improve, with the verdict on it (both or neither)."""
        from cudasmith.search.feedback import verdict_from_dict
        from cudasmith.search.prompts import Parent

        parent, verdict = self.parent, self.verdict
        if parent is None and verdict is None:
            return None
        if parent is None or verdict is None:
            raise UsageError(
                "--parent and --verdict go together: a solution and its `cudasmith eval --json` output"
            )
        for path in (parent, verdict):
            if not path.is_file():
                raise UsageError(f"file not found: {path}")
        try:
            data = json.loads(verdict.read_text())
        except json.JSONDecodeError as exc:
            raise UsageError(f"{verdict}: not JSON ({exc.msg})") from None
        return Parent(parent.read_text(), verdict_from_dict(data))

    def template_folder(self) -> Path | None:
        """Where the prompt templates come from: --templates, else the settings file's."""
        from cudasmith.search.prompts import templates_from_config

        return self.templates or templates_from_config(self.config)


def prompting(command: Callable[..., Any]) -> Callable[..., Any]:
    """The command, taking the prompt flags in place of its `prompt_flags: PromptFlags` parameter."""
    return bundled(command, "prompt_flags", PromptFlags)


@for_a_task
@prompting
def prompt_command(
    *,
    task_flags: TaskFlags,
    device: DeviceOption = None,
    prompt_flags: PromptFlags,
    as_json: JsonOption = False,
) -> None:
    """Print the prompt that would be sent for TASK: task, hardware, rules, solution contract.

    The prompt is written for the device named, which need not be here; without --device, for the GPU
    (without one, for the CPU).

    Example: [bold]cudasmith prompt level1/softmax --device cpu[/]
    """
    from cudasmith.device import known_device

    # Usage errors first, with nothing of torch imported: they come at once. A prompt for a GPU can be
    # written on a machine without one: a device named is not looked for.
    task_flags.check()
    target = known_device(device) if device else command_device(None, judging=False)

    from cudasmith.search.prompts import PromptBuilder

    builder = PromptBuilder(prompt_flags.template_folder())
    prompt = builder.build(task_flags.load(), target, parent=prompt_flags.parent_solution())
    if as_json:
        sys.stdout.write(json.dumps(prompt.to_dict(), indent=2) + "\n")
    else:
        sys.stdout.write(f"─── system ───\n{prompt.system}\n\n─── user ───\n{prompt.user}")
