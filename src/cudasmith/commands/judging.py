"""The judging flags of eval, ask, optimize and bench: defined once, parsed into `EvalOptions` once and
checked once (by `EvalOptions.validate`), so each means the same in every command.

A command decorated with `@judging` takes a `judge: JudgeFlags` parameter; Typer sees the flags in its
place, in the help's "Judging" panel. A new judging flag is a field here and a line in `options()`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cudasmith.commands.bundle import bundled, given
from cudasmith.commands.common import command_device
from cudasmith.commands.options import JUDGING, DeviceOption, value_option
from cudasmith.errors import UsageError

if TYPE_CHECKING:
    from cudasmith.harness.options import EvalOptions

# cudasmith.harness.options.SEEDS_PER_CONFIG (a test keeps them in step: --help must not import torch).
SEEDS_PER_CONFIG = 3

SeedOption = Annotated[
    int | None,
    value_option(
        "--seed",
        metavar="SEED",
        help="The secret seed (every verdict records the one it used): the same input sets again "
        "\\[default: fresh]",
        panel=JUDGING,
    ),
]
SeedsOption = Annotated[
    int,
    typer.Option("--seeds", metavar="COUNT", help="Input sets checked per config.", rich_help_panel=JUDGING),
]
TimingOption = Annotated[
    bool, typer.Option("--timing/--no-timing", help="Time correct candidates.", rich_help_panel=JUDGING)
]
# The harness's defaults (cudasmith.harness.options: CALL_FACTOR, CALL_FLOOR_S, LOAD_TIMEOUT_S and
# FIRST_CALL_EXTRA_S; tests keep these in step).
TimeLimitOption = Annotated[
    float | None,
    value_option(
        "--time-limit",
        metavar="SECONDS",
        help="Longest one call of forward may take; slower is a timeout verdict "
        "\\[default: 100x the reference's own time, at least 5]",
        panel=JUDGING,
    ),
]
LoadTimeLimitOption = Annotated[
    float | None,
    value_option(
        "--load-time-limit",
        metavar="SECONDS",
        help="Longest the solution's import and kernel compilation may take \\[default: 120]",
        panel=JUDGING,
    ),
]
FirstCallExtraOption = Annotated[
    float | None,
    value_option(
        "--first-call-extra",
        metavar="SECONDS",
        help="Added to the first call's limit, for JIT compilation and autotuning \\[default: 10]",
        panel=JUDGING,
    ),
]
ConfigTimeLimitOption = Annotated[
    float | None,
    value_option(
        "--config-time-limit",
        metavar="SECONDS",
        help="Longest the check of one config may be estimated to take (from its bytes and the device's "
        "measured bandwidth); a larger config is too large for the device \\[default: 600]",
        panel=JUDGING,
    ),
]
# cudasmith.harness.walls.memory.MEMORY_LIMIT_OPTION names this option in the judge's messages.
MemoryLimitOption = Annotated[
    float | None,
    value_option(
        "--memory-limit",
        metavar="GIB",
        help="Host memory each worker (and what it starts) may use, in GiB \\[default: half the machine's]",
        panel=JUDGING,
    ),
]
RulesOption = Annotated[
    str,
    typer.Option(
        "--rules",
        metavar="RULES",
        help="strict: the solution's own kernels do the work; kernelbench: PyTorch compute allowed "
        "everywhere, as KernelBench allows it (verdicts still name the operators and the solution's share)",
        rich_help_panel=JUDGING,
    ),
]
RequireIsolationOption = Annotated[
    bool,
    typer.Option(
        "--require-isolation",
        help="Refuse to judge where candidates' files cannot be isolated (no Landlock, no namespaces).",
        rich_help_panel=JUDGING,
    ),
]
InFlightOption = Annotated[
    int | None,
    value_option(
        "--in-flight",
        metavar="COUNT",
        help="Candidates judged at once per GPU (each in its own process; timing stays alone on the device) "
        "\\[default: from the cores and GPU memory]",
        panel=JUDGING,
    ),
]
BaselinesOption = Annotated[
    str | None,
    value_option(
        "--baselines",
        metavar="NAMES",
        help="Timed beside eager PyTorch: compile, compile-max-autotune, expert, comma-separated "
        "\\[default: compile and expert on a GPU, expert on the CPU]",
        panel=JUDGING,
    ),
]
L2Option = Annotated[
    str | None,
    value_option(
        "--l2",
        metavar="STATE",
        help="L2 while timing: cold (flushed before each call) or hot \\[default: the problem's, cold]",
        panel=JUDGING,
    ),
]
GraphOption = Annotated[
    bool,
    typer.Option(
        "--graph",
        help="Time CUDA-graph replays of each call (for launch-bound kernels).",
        rich_help_panel=JUDGING,
    ),
]


@dataclass(frozen=True)
class JudgeFlags:
    """What the judging flags of a command said."""

    device: DeviceOption = None
    seed: SeedOption = None
    seeds: SeedsOption = SEEDS_PER_CONFIG
    timing: TimingOption = True
    time_limit: TimeLimitOption = None
    load_time_limit: LoadTimeLimitOption = None
    first_call_extra: FirstCallExtraOption = None
    config_time_limit: ConfigTimeLimitOption = None
    memory_limit: MemoryLimitOption = None
    rules: RulesOption = "strict"
    require_isolation: RequireIsolationOption = False
    in_flight: InFlightOption = None
    baselines: BaselinesOption = None
    l2: L2Option = None
    graph: GraphOption = False

    def given(self) -> list[str]:
        """The flags the command line set, as typed (`--time-limit`)."""
        return given(self)

    def refuse_with_resume(self, also: list[str], what: str) -> None:
        """--resume goes on with the run's own task, options and device: a flag that would change them
        (or `also`, the command's own such arguments) is refused rather than silently ignored."""
        given = also + [flag for flag in self.given() if flag != "--device"]
        if given:
            raise UsageError(
                f"--resume goes on with the run's own {what} and options; drop {', '.join(given)}"
            )

    def check(self) -> None:
        """Every flag checked before torch is imported, so that a usage error comes at once: each value,
        the device's name and, where that needs no torch (hardware.no_gpu_here), that a GPU is here."""
        from cudasmith.device import known_device
        from cudasmith.hardware import no_gpu_here

        named = known_device(self.device) if self.device is not None else None
        resolved_now = named == "cpu" or no_gpu_here()
        self._options(command_device(named, judging=True) if resolved_now else named or "cuda").validate()

    def options(self) -> EvalOptions:
        """The judge's options, checked; the device resolved (without a GPU, one named or refused)."""
        options = self._options(command_device(self.device, judging=True))
        options.validate()
        return options

    def _options(self, device: str) -> EvalOptions:
        from cudasmith.harness.baselines import parse_baselines
        from cudasmith.harness.options import (
            CONFIG_TIME_LIMIT_S,
            FIRST_CALL_EXTRA_S,
            LOAD_TIMEOUT_S,
            EvalOptions,
        )

        return EvalOptions(
            device=device,
            seed=self.seed,
            seeds_per_config=self.seeds,
            timing=self.timing,
            rules=self.rules,
            require_isolation=self.require_isolation,
            in_flight=self.in_flight,
            baselines=parse_baselines(self.baselines) if self.baselines else None,
            l2_state=self.l2,
            graph=self.graph,
            call_timeout_s=self.time_limit,
            load_timeout_s=LOAD_TIMEOUT_S if self.load_time_limit is None else self.load_time_limit,
            first_call_extra_s=FIRST_CALL_EXTRA_S if self.first_call_extra is None else self.first_call_extra,
            memory_limit_bytes=None if self.memory_limit is None else int(self.memory_limit * 2**30),
            config_time_limit_s=(
                CONFIG_TIME_LIMIT_S if self.config_time_limit is None else self.config_time_limit
            ),
        )


def judging(command: Callable[..., Any]) -> Callable[..., Any]:
    """The command, taking the judging flags in place of its `judge: JudgeFlags` parameter."""
    return bundled(command, "judge", JudgeFlags)
