"""Correctness rounds of one candidate: a cascade over configs and input sets, cheapest first.

The smallest config with one input set goes first, then one input set of every other config (smallest
to largest), then the remaining input sets and the harness's own drawn inputs of each. Each step asks
the judge for the reference outputs (computed once per session), runs the candidate, and has the judge
compare; the first failure ends the candidate, and its verdict says what failed and where.

Without timing, each config is also checked once on inputs the candidate's worker perturbs just before
the call, from fresh entropy (as timed calls are): inputs predicted from the secret seed, or reference
outputs read from another process's memory, then answer nothing. The reference for them is computed only
after the call.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path

from cudasmith.harness.builds import lazy_build
from cudasmith.harness.options import EvalOptions
from cudasmith.harness.verdict import ConfigResult, SkippedConfig, Verdict
from cudasmith.harness.view import SessionView
from cudasmith.harness.walls.process import WorkerFailure, WorkerProcess
from cudasmith.harness.wire.messages import Construct, Failed, InputSpec, Run
from cudasmith.harness.wire.results import ConfigDescription
from cudasmith.harness.wire.status import Rule, Status
from cudasmith.harness.witnesses.rechecks import missing_evidence
from cudasmith.tasks.inputs import derive_seed
from cudasmith.tasks.parameters import NO_PARAMETERS
from cudasmith.tasks.problem import Config, Problem
from cudasmith.wording import plural

# On the CPU, configs bigger than this (inputs plus outputs, or FLOPs) are skipped; the smallest
# public and the smallest hidden config always run.
CPU_MAX_CONFIG_BYTES = 64 * 1024**2
CPU_MAX_CONFIG_FLOPS = 2e9
DRAWN = "harness-drawn inputs (signed, wider range than the problem's)"
FRESH = "inputs perturbed afresh just before the call"
# Why a candidate whose parameters could not be drawn fails where the default ones make the answer zero.
UNCHECKABLE = (
    "the answer is zero up to round-off under the default parameters, which a kernel that computes nothing "
    "also gives, and ModelNew's parameters do not match Model's, so the judge could not draw them"
)
# Constructors that take longer than this are reported as builds.
BUILD_NOTE_S = 1.0


# Said once in a verdict whose calls ran work on a stream beside the caller's where the profiler's records did
# not name what each wait waited for (harness/workers/forward.py): the race check was the marker's alone.
SIDE_STREAMS_UNREAD = (
    "work ran on a stream beside the caller's, and this torch's profiler did not say what each wait waited "
    "for: only the end-of-forward marker checked it, which misses side work that ended early without a wait "
    "(the judge reads the waits with its switch of CUPTI's event records, on unless "
    "CUDASMITH_CUDA_EVENT_RECORDS=0; eval --explain-defences)"
)


def config_bytes(described: ConfigDescription) -> float:
    """Inputs plus outputs of a described config (unknown ones count as large)."""
    if described.input_bytes is None:
        return float("inf")
    return float(described.input_bytes + (described.output_bytes or 0))


def select_configs(
    problem: Problem, descriptions: list[ConfigDescription], device: str
) -> tuple[list[tuple[int, Config, bool]], list[SkippedConfig]]:
    """Configs to run (index, config, hidden) and those skipped with why; on the GPU every one runs."""
    everything = [(i, c, h) for i, (c, h) in enumerate(problem.all_configs())]
    if device.startswith("cuda"):
        return everything, []

    def too_big(index: int) -> str | None:
        described = descriptions[index]
        size = config_bytes(described)
        if size > CPU_MAX_CONFIG_BYTES and size != float("inf"):
            return f"{size / 2**20:.0f} MiB of inputs and outputs"
        if (described.flops or 0) > CPU_MAX_CONFIG_FLOPS:
            return f"{(described.flops or 0) / 1e9:.1f} GFLOP"
        return None

    selected, skipped = [], []
    for hidden in (False, True):
        group = [item for item in everything if item[2] is hidden]
        smallest = min((item[0] for item in group), key=lambda i: config_bytes(descriptions[i]), default=None)
        for index, config, is_hidden in group:
            why = too_big(index)
            if why is None or index == smallest:
                selected.append((index, config, is_hidden))
            else:
                shown = "hidden" if is_hidden else config
                skipped.append(SkippedConfig(index, shown, f"too large for the CPU ({why})"))
    return selected, skipped


@dataclass(frozen=True)
class Step:
    """One input set of one config in the cascade."""

    index: int
    hidden: bool
    spec: InputSpec
    # The candidate's worker perturbs the inputs just before the call, from fresh entropy.
    fresh: bool = False

    @property
    def drawn(self) -> bool:
        return self.spec.drawn


def cascade(
    selected: Sequence[tuple[int, Config, bool]],
    descriptions: Sequence[ConfigDescription],
    secret: int,
    seeds_per_config: int,
    drawn: bool,
    parameters: bool = False,
    fresh: bool = False,
) -> list[Step]:
    """The order of correctness steps: one input set of every config (smallest first), then the rest;
    with `parameters`, module parameters drawn by the judge on every step; with `fresh`, one more step per
    config on its first input set perturbed afresh in the candidate's worker."""
    by_size = sorted(selected, key=lambda item: config_bytes(descriptions[item[0]]))

    def spec(index: int, config: Config, sample: int | None) -> InputSpec:
        init = derive_seed(secret, "init", index)
        if sample is None:
            seed = derive_seed(secret, "drawn", index)
            return InputSpec(index, config, init, seed, drawn=True, parameters=parameters)
        return InputSpec(
            index, config, init, derive_seed(secret, "input", index, sample), parameters=parameters
        )

    steps = [Step(i, h, spec(i, c, 0)) for i, c, h in by_size]
    for index, config, hidden in by_size:
        steps += [Step(index, hidden, spec(index, config, s)) for s in range(1, seeds_per_config)]
        if drawn:
            steps.append(Step(index, hidden, spec(index, config, None)))
        if fresh:
            steps.append(Step(index, hidden, spec(index, config, 0), fresh=True))
    return steps


def construct(
    view: SessionView,
    candidate: WorkerProcess,
    verdict: Verdict,
    result: ConfigResult,
    spec: InputSpec,
    name: str,
    undrawn: set[int],
) -> bool:
    """Build ModelNew for a config under the load allowance (a constructor may build kernels: a build is
    never a call); record how long it took and whether the judge's drawn parameters reached it (configs
    where Model's parameters could not be drawn into ModelNew's go into `undrawn`)."""
    what = f"constructing ModelNew for {name} (builds included: --load-time-limit gives it more)"
    try:
        reply = candidate.request(Construct(spec), view.options.load_timeout_s, what)
    except WorkerFailure as failure:
        result.fail(failure.status, str(failure), failure.rule)
        return False
    if isinstance(reply, Failed):
        result.fail(
            reply.verdict_status, f"{name}: constructing ModelNew: {reply.reason}", reply.verdict_rule
        )
        verdict.artifacts.setdefault("traceback", reply.traceback)
        return False
    seconds = reply.seconds
    verdict.build_s = round((verdict.build_s or 0.0) + seconds, 3)
    if seconds > BUILD_NOTE_S:
        verdict.note(
            f"ModelNew's constructor took {seconds:.1f} s on {name} (a build: not a call, never timed)"
        )
    result.parameters_drawn = reply.parameters_drawn
    why_not = reply.parameters_reason
    if result.parameters_drawn:
        verdict.parameters = "drawn by the judge, the same values for Model and ModelNew"
    elif why_not == NO_PARAMETERS:
        verdict.parameters = NO_PARAMETERS
    elif why_not:
        verdict.parameters = f"default initialisation (not drawn: {why_not})"
        undrawn.add(result.index)
        verdict.note(f"module parameters kept at their default initialisation on {name}: {why_not}")
    return True


def label(index: int, config: Config, hidden: bool, problem: Problem) -> str:
    if hidden:
        return f"hidden config #{index - len(problem.configs)}"
    return f"config {index} {config}" if config else f"config {index}"


def cascade_steps(problem: Problem, options: EvalOptions) -> tuple[bool, bool, bool]:
    """What the cascade does beside the seeded input sets: the harness's drawn inputs, drawn parameters,
    and one input set perturbed afresh (without timing: timed calls are re-checked on such inputs)."""
    with_drawn = options.drawn_inputs and options.defences and not problem.has_validate
    with_parameters = options.drawn_parameters and options.defences
    return with_drawn, with_parameters, options.defences and not options.timing


def input_sets(problem: Problem, options: EvalOptions) -> int:
    """Input sets each config is checked on: the seeded ones, the drawn one, the one perturbed afresh."""
    with_drawn, _, fresh = cascade_steps(problem, options)
    return options.seeds_per_config + with_drawn + fresh


def session_cascade(view: SessionView) -> list[Step]:
    """The cascade's steps under the session's options, as every candidate's checks take them."""
    problem, options = view.problem, view.options
    with_drawn, with_parameters, fresh = cascade_steps(problem, options)
    return cascade(
        view.selected,
        view.described,
        view.secret,
        options.seeds_per_config,
        with_drawn,
        with_parameters,
        fresh,
    )


def first_pass(view: SessionView) -> list[tuple[InputSpec, str]]:
    """The reference inputs of the cascade's first pass (one input set of every config, smallest first) as a
    typical candidate's checks ask for them (module parameters drawn where the config has any), each with
    its label: what a session may compute before its first candidate asks (session.py)."""
    drawn = view.options.drawn_parameters and view.options.defences
    found = []
    for step in session_cascade(view)[: len(view.selected)]:
        parameters = drawn and bool(view.described[step.index].parameter_bytes)
        spec = replace(step.spec, parameters=parameters)
        found.append((spec, label(step.index, step.spec.config, step.hidden, view.problem)))
    return found


def check_candidate(
    view: SessionView, candidate: WorkerProcess, verdict: Verdict, results: dict[int, ConfigResult]
) -> bool:
    """Run the cascade; False (with the failure recorded in `results`) at the first failing step."""
    problem, options = view.problem, view.options
    steps = session_cascade(view)
    first_call, constructed, called = True, set(), set()
    undrawn: set[int] = set()
    lazy = lazy_build(Path(verdict.solution).read_text(errors="replace"))
    for number, step in enumerate(steps):
        config = step.spec.config
        name = label(step.index, config, step.hidden, problem)
        if step.drawn:
            name = f"{name} on {DRAWN}"
        if step.fresh:
            name = f"{name} on {FRESH}"
        view.progress(f"checking {name}", number, len(steps))
        result = results[step.index]
        if step.index not in constructed:
            if not construct(view, candidate, verdict, result, step.spec, name, undrawn):
                return False
            constructed.add(step.index)
        spec = replace(step.spec, parameters=result.parameters_drawn)
        reference = view.oracle.reference(spec, name)
        if reference.float64_reason:
            verdict.note(f"no float64 reference ({reference.float64_reason}); judged against the task dtype")
        if step.drawn and reference.drawn_skip:
            verdict.note(
                f"{DRAWN} skipped on {label(step.index, config, step.hidden, problem)}: {reference.drawn_skip}"
            )
            continue
        if reference.degenerate and not step.drawn:
            verdict.note(
                f"the problem's own inputs make the output trivial on {name}: {reference.degenerate}"
            )
        limit = view.call_limit(step.index) + (options.first_call_extra_s if first_call else 0.0)
        what = f"running {name}" + (
            " (the first call, compilation and autotuning included: --first-call-extra gives it more)"
            if first_call
            else ""
        )
        builds = lazy if step.index not in called else None  # a model's first call may build
        if builds:
            limit += options.load_timeout_s
            what = f"running {name} (the first call, {builds} building: --load-time-limit gives it more)"
        called.add(step.index)
        if reference.zero_answer:
            if step.index in undrawn:
                result.fail(Status.INCORRECT, f"{name}: {UNCHECKABLE}")
                return False
            verdict.note(f"the answer on {name} is {reference.zero_answer}: errors are judged on that scale")
        request = Run(spec, view.output_bytes(step.index), fresh_perturbation=step.fresh)
        started = time.monotonic()
        try:
            # A call is a step of the timing lease: a timing window waits for it to end. A first call
            # that builds is not (a window would wait out a build): its worker is paused instead.
            with nullcontext() if builds else view.lease.step(candidate):
                reply = candidate.request(request, limit, what)
        except WorkerFailure as failure:
            result.fail(failure.status, str(failure), failure.rule)
            return False
        if builds:
            seconds = time.monotonic() - started
            verdict.build_s = round((verdict.build_s or 0.0) + seconds, 3)
            verdict.note(
                f"the first call builds ({builds}): it took {seconds:.1f} s on {name}, under the load allowance"
            )
        first_call = False
        if isinstance(reply, Failed):
            result.fail(reply.verdict_status, f"{name}: {reply.reason}", reply.verdict_rule)
            verdict.artifacts.setdefault("traceback", reply.traceback)
            return False
        if options.defences and (why := missing_evidence(reply.evidence, 1, marked=False)):
            result.fail(Status.REJECTED, f"{name}: judge state tampered: {why}", Rule.JUDGE_STATE)
            return False
        for op, count in reply.torch_ops.items():
            verdict.torch_ops[op] = max(count, verdict.torch_ops.get(op, 0))
        if reply.side_streams_unread:
            verdict.note(SIDE_STREAMS_UNREAD)
        if step.fresh:
            if reply.perturb is None:
                reason = f"{name}: the worker did not say how it perturbed the inputs"
                result.fail(Status.REJECTED, reason, Rule.FORGED_RESULTS)
                return False
            spec = replace(spec, perturb=reply.perturb)  # the reference is computed only now
        comparison = view.oracle.compare([(spec, reply.outputs)], candidate.token)[0]
        # The fresh step is a defence, not a measurement: its inputs cannot be drawn again, so the input sets
        # counted and the errors reported (the same again with --seed) are the seeded ones'; it still fails
        # a candidate that does not match there.
        result.seeds_checked += 0 if step.fresh else 1
        if comparison.transfer is not None:
            reason = f"{name}: the outputs could not be read ({comparison.transfer})"
            result.fail(Status.REJECTED, reason, Rule.FORGED_RESULTS)
            return False
        if comparison.kernelbench is not None:  # KernelBench's check holds only if it holds on every set
            result.kernelbench_tolerance = (
                result.kernelbench_tolerance is not False and comparison.kernelbench
            )
        if not step.fresh or not comparison.ok:
            result.rel_err = max(result.rel_err or 0.0, comparison.rel_err)
            result.max_abs_err = max(result.max_abs_err or 0.0, comparison.max_abs_err)
        if not comparison.ok:
            result.fail(Status.INCORRECT, f"{name}: {comparison.reason}")
            result.mismatch = comparison.report
            return False
    for result in results.values():
        result.reason = f"matches on {plural(result.seeds_checked, 'input set')} (worst rel_err {result.rel_err or 0:.1e})"
    return True
