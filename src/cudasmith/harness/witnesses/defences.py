"""Each defence of the judge: the layer it lives in, the rules it enforces, and what it cannot stop.

`cudasmith eval --explain-defences` prints this table. The layers are where the code runs: the parent (the
process that never imports candidate code), the judge's own worker (the reference, the comparisons), the
candidate's worker (its own process: whatever runs there, a candidate with native code or raw memory can
rewrite, so its checks are a second line), the sandbox (what the kernel enforces on that process), and the
static screen (the source, read before any process starts). What a verdict rests on (that the outputs were
right, how long they took, that the evidence is complete) is measured by the first two.
"""

from __future__ import annotations

from dataclasses import dataclass

from cudasmith.harness.wire.status import Rule

LAYERS = ("parent", "judge worker", "candidate worker", "sandbox", "static screen")


@dataclass(frozen=True)
class Defence:
    """One defence: its name, the layer it lives in, the rules it names, what it does and cannot stop."""

    name: str
    layer: str
    rules: tuple[Rule, ...]
    does: str
    cannot_stop: str


DEFENCES = (
    Defence(
        "static screen",
        "static screen",
        (
            Rule.PYTORCH_COMPUTE,
            Rule.TAMPERING,
            Rule.INTROSPECTION,
            Rule.EARLY_EXIT,
            Rule.NETWORKING,
            Rule.PROCESSES_THREADS,
            Rule.FILE_DESCRIPTORS,
        ),
        "refuses source that names a forbidden construct (torch.compile under strict rules, os._exit, gc, raw "
        "file descriptors, assignments to torch's or the judge's names) before any process starts",
        "names built at run time (importlib.import_module('soc' + 'ket')): the run-time layers catch those",
    ),
    Defence(
        "sandbox",
        "sandbox",
        (Rule.SANDBOX_WRITE, Rule.SANDBOX_READ, Rule.NETWORKING, Rule.INFRASTRUCTURE),
        "the worker writes its scratch folder, its own shared-memory folder and one build folder, reads what "
        "it needs, has no network; the policy is whole from exec (worked out in the parent, down to /proc), and "
        "a worker that cannot be confined where a mechanism works does not run",
        "what the kernel lets every process do (list /dev/shm's folder names, read system files); under the "
        "namespace fallback, reads outside the paths it hides",
    ),
    Defence(
        "supervisor",
        "sandbox",
        (Rule.EARLY_EXIT, Rule.PROCESSES_THREADS),
        "the worker's parent: its own process group, subreaper of every process it starts, memory limit, "
        "everything left killed at the end",
        "work a stray process does while the worker runs (the timing lease pauses and watches them)",
    ),
    Defence(
        "build folders",
        "parent",
        (Rule.SANDBOX_WRITE,),
        "each solution's build folder is written by one worker of that solution at a time (its slot renamed "
        "into place) and sealed when it ends; a folder changed or grown since is moved aside",
        "a solution that corrupts its own build",
    ),
    Defence(
        "reference out of reach",
        "judge worker",
        (Rule.WRONG_ANSWER,),
        "reference outputs are computed in the judge's worker, after the call, from pristine inputs, in the "
        "task dtype and float64; outputs are compared there, never in the candidate's process",
        "nothing of the comparison; a validator is the problem's own code",
    ),
    Defence(
        "fresh inputs",
        "candidate worker",
        (Rule.CACHING, Rule.WRONG_ANSWER),
        "every timed call's inputs are perturbed just before it, from the OS's entropy; configs, seeds and "
        "module parameters are drawn under a session secret",
        "a candidate that rewrites the entropy it is handed (raw memory): the frozen re-check still compares",
    ),
    Defence(
        "frozen re-check",
        "parent",
        (Rule.CACHING, Rule.FORGED_RESULTS, Rule.JUDGE_STATE),
        "every timed call's outputs are kept; the parent stops the candidate's worker, draws which to re-check "
        "only then, and the judge's worker reads them from shared memory or CUDA IPC; fewer kept than asked "
        "is judge state tampered",
        "work done for every kept call outside the timed calls (the parent's clock bounds it); where outputs "
        "are too large to keep every call's, which are kept is drawn inside the worker",
    ),
    Defence(
        "the parent's clock",
        "parent",
        (Rule.TIMING_CLOCK,),
        "on the CPU, the calls' claimed times must cover the call thread's CPU time the kernel counted; on a "
        "GPU, spans and issuing must explain the request's wall time; calibrated on the judge's empty calls "
        "before the solution loads",
        "a forgery smaller than the per-call allowance (calls shorter than a millisecond on the CPU, than the "
        "per-sample overhead on a GPU); work moved to other threads while the call thread sleeps (CPU); "
        "host-side claims inflated with the spans (GPU)",
    ),
    Defence(
        "evidence owed",
        "parent",
        (Rule.JUDGE_STATE,),
        "every reply about calls carries the worker's evidence (recording whole, a check per call, threads, "
        "marked calls); less while the defences are on is a rejection, never a verdict on less",
        "evidence forged whole by native code: the frozen re-check and the clock still judge",
    ),
    Defence(
        "result channel",
        "parent",
        (Rule.FORGED_RESULTS, Rule.EARLY_EXIT),
        "replies are typed and checked field by field, counted by both sides; outputs cross by reference "
        "checked against their sizes, never unpickled",
        "nothing on the channel; what a reply claims is judged by the rows above",
    ),
    Defence(
        "timing lease",
        "parent",
        (Rule.PROCESSES_THREADS,),
        "a timing window has the device alone: other workers paused, the window checked afterwards for other "
        "processes and timed again",
        "processes outside the judge's sessions on a shared machine (named, and the speedup withheld)",
    ),
    Defence(
        "roofline",
        "parent",
        (Rule.IMPOSSIBLE_TIME,),
        "a time below the device's floor for the bytes and FLOPs of the config is refused",
        "forgeries that stay above the floor (the clock and the re-check judge those)",
    ),
    Defence(
        "audit hook",
        "candidate worker",
        (Rule.INTROSPECTION, Rule.TAMPERING, Rule.SIGNALS, Rule.PROCESSES_THREADS, Rule.PYTORCH_COMPUTE),
        "refuses candidate code the judge's frames, gc's object lists, tracers, ctypes' raw-memory routes "
        "(from_address, from_buffer, string_at, cast, memmove, memset, libc's copies), writes to trusted code, "
        "switching the recording off, signal handlers; counts threads",
        "native code, numpy's array interface over any address, indexing a ctypes pointer past its object",
    ),
    Defence(
        "tamper snapshot",
        "candidate worker",
        (Rule.TAMPERING, Rule.PROCESSES_THREADS, Rule.SIGNALS),
        "after every call, the judge's names, classes and constants, threads, modes and handlers are as they "
        "were before the solution loaded",
        "writes into objects' memory that leave every name bound as it was",
    ),
    Defence(
        "operator and kernel recording",
        "candidate worker",
        (Rule.PYTORCH_COMPUTE,),
        "PyTorch operators below the dispatcher on every thread, GPU kernels by origin in CUPTI's records, "
        "libraries linked or reached through ctypes; each config's own share of the time",
        "a recording rewritten in the process (its absence is judge state tampered)",
    ),
    Defence(
        "input mutation",
        "candidate worker",
        (Rule.INPUT_MUTATION,),
        "inputs are compared bit for bit with pristine copies after every call",
        "a mutation undone before the call returns",
    ),
    Defence(
        "races by construction",
        "candidate worker",
        (Rule.SIDE_STREAM,),
        "the call's happens-before graph from CUPTI's records (streams, event records, waits, host syncs): "
        "work on another stream the caller's stream does not wait for is a race however early it ended, and "
        "so is a self-wait; the end-of-forward marker is the second detector",
        "the legacy default stream's implicit synchronisation with blocking streams (named a race: wait "
        "explicitly); records forged in the process; a torch whose profiler does not say which record a wait "
        "waited for and where the judge's switch of CUPTI's event records is off or fails "
        "(CUDASMITH_CUDA_EVENT_RECORDS=0; torch 2.11 needs it): only the marker, which misses side work "
        "that ended early",
    ),
)


def rules_covered() -> set[Rule]:
    """Every rule some defence names."""
    return {rule for defence in DEFENCES for rule in defence.rules}
