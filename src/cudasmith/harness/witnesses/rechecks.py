"""What a candidate's replies owe the parent, and the re-check of timed outputs read while it is frozen.

- **Evidence.** While the defences are on, every reply about calls carries the worker's evidence
  (messages.Evidence): its recording whole, an integrity check per call, the threads it saw, and on the
  CPU a marked range per timed call in its recording. A reply with less (the worker's defences switched
  off, its counters rewritten) is judge state tampered with (Rule.JUDGE_STATE): a verdict is never reached
  on less evidence than the defences owe.
- **Timed outputs, read while the candidate is stopped.** A timed batch keeps every timed call's outputs
  (as many as fit the bytes the parent allows; the reply must carry that many). Once the reply is in, the
  parent stops the candidate's worker (SIGSTOP, as the timing lease stops the others), and only then draws
  which of the kept calls to re-check, from its own entropy; the judge's worker reads those outputs (shared
  memory on the CPU, CUDA IPC on a GPU) and compares them with the reference for the inputs each call saw,
  and the candidate runs again. Nothing in the candidate's process knew the draw while it could act on it:
  a candidate that skips the work on some calls must hope none of them is drawn. Each kept call's outputs
  lie in memory of their own: references of two calls to the same bytes are a forgery.

What this cannot stop: a candidate that does the work of every kept call, but outside the timed calls
(the parent's clock, bracket.py, bounds that); where outputs are too large to keep every call's, which
calls are kept is drawn in the worker, from the OS's entropy, before the parent's draw.
"""

from __future__ import annotations

import itertools
import secrets
from typing import TYPE_CHECKING

from cudasmith.harness.walls.pausing import pause_workers
from cudasmith.harness.walls.process import WorkerProcess
from cudasmith.harness.wire.messages import TimeSpec
from cudasmith.harness.wire.outputs import Evidence, OutputRef, Timed
from cudasmith.harness.wire.status import Rule, Status
from cudasmith.harness.witnesses.oracle import Oracle

if TYPE_CHECKING:
    # Types only: verdict.py imports witnesses (roofline.py), and an import back would close a cycle.
    from cudasmith.harness.verdict import ConfigResult, Verdict

# The bytes of timed outputs a candidate's worker keeps for the parent's draw: device memory on a GPU,
# shared memory on the CPU (whose configs are small: CPU_MAX_CONFIG_BYTES).
RETAIN_BYTES_GPU = 8 * 1024**3
RETAIN_BYTES_CPU = 1024**3


def retain_bytes(gpu: bool) -> int:
    """How many bytes of timed outputs a candidate's worker keeps."""
    return RETAIN_BYTES_GPU if gpu else RETAIN_BYTES_CPU


def missing_evidence(evidence: Evidence | None, calls: int, marked: bool) -> str | None:
    """Why a reply's evidence is short of what `calls` calls owe (`marked`: a marked range per call in the
    recording, the CPU's timed calls), or None when it is whole."""
    if evidence is None:
        return "the reply carries none of the evidence the judge's defences owe (its defences were off)"
    if not evidence.recorded:
        return "the reply says the judge's recording was not whole"
    if evidence.checks < calls:
        return f"{calls} call(s) but {evidence.checks} integrity check(s) in the reply"
    if evidence.threads < 1:
        return "the reply says the judge's check saw no thread at all"
    if marked and evidence.marked_calls < calls:
        return f"{calls} timed call(s) but {evidence.marked_calls} in the judge's recording"
    return None


def kept_enough(reply: Timed, spec: TimeSpec, output_bytes: int | None) -> str | None:
    """Why the calls a timed reply kept are not what the parent asked for, or None: as many as fit the
    bytes allowed (every timed call's where they all fit), each a timed call once, on an input set given, and
    as many outputs as they say."""
    samples = len(reply.measurement.samples_ms)
    fit = max(1, spec.retain_bytes // output_bytes) if output_bytes else 1
    wanted = min(samples, fit)
    calls = [check.call for check in reply.checks]
    if len(calls) < wanted:
        return f"{len(calls)} timed call(s) kept for the judge's draw, not the {wanted} asked for"
    made = max(samples, reply.measurement.calls)  # a GPU's calls whose samples were not kept are numbered too
    if len(set(calls)) != len(calls) or any(not 0 <= call < made for call in calls):
        return "the timed calls kept are not distinct timed calls"
    if len({check.perturb for check in reply.checks}) != len(reply.checks):
        return "two timed calls kept claim the same fresh inputs"
    if any(not 0 <= check.set < len(spec.input_seeds) for check in reply.checks):
        return "a timed call kept names an input set never given"
    if sum(check.n_outputs for check in reply.checks) != len(reply.outputs):
        return "the timed calls kept do not account for the outputs exported"
    if shared_memory(reply.outputs):
        return "two outputs of timed calls kept lie in the same memory"
    return None


def shared_memory(outputs: list[OutputRef]) -> bool:
    """Whether two of `outputs` overlap in memory (the same file or device allocation): the outputs of timed
    calls kept are each a copy of their own, so one answer standing for several calls is a forgery."""
    ranges = sorted(
        ((ref.kind, ref.name or ref.handle), ref.offset, ref.offset + ref.nbytes)
        for ref in outputs
        if ref.kind != "empty" and ref.nbytes
    )
    return any(a[0] == b[0] and b[1] < a[2] for a, b in itertools.pairwise(ranges))


def frozen_recheck(
    oracle: Oracle,
    candidate: WorkerProcess,
    result: ConfigResult,
    spec: TimeSpec,
    reply: Timed,
    draws: int,
    gpu: bool,
    name: str,
    verdict: Verdict,
) -> bool:
    """Stop the candidate's worker, draw `draws` of the calls it kept, have the judge's worker read and
    compare their outputs, let the candidate run again; False (the failure recorded on `result`) when one
    could not be read or is wrong."""
    offsets, offset = [], 0
    for check in reply.checks:
        offsets.append(offset)
        offset += check.n_outputs
    pause_workers([candidate], gpu_only=gpu)
    try:
        drawn = secrets.SystemRandom().sample(range(len(reply.checks)), min(draws, len(reply.checks)))
        items = [
            (
                spec.input(reply.checks[i].set, reply.checks[i].perturb),
                reply.outputs[offsets[i] : offsets[i] + reply.checks[i].n_outputs],
            )
            for i in drawn
        ]
        comparisons = oracle.compare(items, candidate.token, rechecks=True) if items else []
    finally:
        candidate.resume()
    result.checked_calls = len(items)
    timed_calls = len(reply.measurement.samples_ms)
    if len(items) < min(draws, timed_calls):
        escape = 2.0 ** -len(items)
        verdict.note(
            f"{name}: {len(items)} of {timed_calls} timed calls re-checked, not {draws} (their outputs are too "
            f"large to keep more): skipping the work on half the calls escapes with probability {escape:.1e}"
        )
    for index, comparison in zip(drawn, comparisons, strict=True):
        check = reply.checks[index]
        if comparison.transfer is not None:
            reason = f"{name}: a timed call's outputs could not be read ({comparison.transfer})"
            result.fail(Status.REJECTED, reason, Rule.FORGED_RESULTS)
            return False
        if not comparison.ok:
            reason = (
                f"{name}: the output of timed call {check.call} is wrong although the checked calls were "
                f"right (a cached result, or work done only when checked): {comparison.reason}"
            )
            result.fail(Status.REJECTED, reason, Rule.CACHING)
            return False
    return True
