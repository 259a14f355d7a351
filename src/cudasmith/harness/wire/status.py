"""What a verdict, a config or a worker's failure says happened: the status, as a worker reports it and the
parent records it."""

from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    """A verdict's status (a string: `Status.CORRECT == "correct"`, and JSON writes its value)."""

    CORRECT = "correct"
    INCORRECT = "incorrect"
    REJECTED = "rejected"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    # A config's only, never a verdict's: checking stopped at another config's failure before this one
    # ran on any input set.
    NOT_CHECKED = "not_checked"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, value: object, default: Status | None = None) -> Status:
        """The status a worker reported; one that is not a status at all is a rejection (a forged reply)."""
        try:
            return cls(value)
        except ValueError:
            return default or cls.REJECTED


# What a verdict's status can be.
STATUSES = tuple(status.value for status in Status if status is not Status.NOT_CHECKED)
CONFIG_STATUSES = tuple(status.value for status in Status)


class Rule(str, Enum):
    """The rule a rejection broke, or what kind of failure a verdict is: named where the verdict is born
    (a worker's check, the parent's, the static screen), carried as a verdict's `rule`, and counted by
    `bench` and `report`. Never read back out of a reason, whose words may change."""

    PYTORCH_COMPUTE = "pytorch-compute"
    INPUT_MUTATION = "input-mutation"
    SIDE_STREAM = "side-stream"
    CACHING = "caching"
    IMPOSSIBLE_TIME = "impossible-time"
    FORGED_RESULTS = "forged-results"
    TAMPERING = "tampering"
    INTROSPECTION = "introspection"
    PROCESSES_THREADS = "processes-threads"
    EARLY_EXIT = "early-exit"
    FILE_DESCRIPTORS = "file-descriptors"
    NETWORKING = "networking"
    SANDBOX_WRITE = "sandbox-write"
    SANDBOX_READ = "sandbox-read"
    SIGNALS = "signals"
    # Evidence the parent measures itself contradicts or is missing from what the worker reported.
    TIMING_CLOCK = "timing-clock"
    JUDGE_STATE = "judge-state"
    # A rejection whose rule no longer has a name (a verdict from an older judge the store could not place).
    OTHER = "other"
    # Failures that break no rule: what went wrong.
    WRONG_ANSWER = "wrong-answer"
    DOES_NOT_BUILD = "does-not-build"
    CRASH = "crash"
    TIME_LIMIT = "time-limit"
    # The judge could not build the walls a candidate runs in (its sandbox refused): nothing was judged.
    INFRASTRUCTURE = "infrastructure"

    def __str__(self) -> str:
        return self.value

    @property
    def headline(self) -> str:
        """What the rule forbids (or what the failure is), as tables and reports name it."""
        return RULE_TITLES[self]

    @property
    def is_rejection(self) -> bool:
        """Whether this is a rule of the judge (a `rejected` verdict's), not a failure's kind."""
        return self not in FAILURE_KINDS

    @classmethod
    def of_status(cls, status: Status) -> Rule | None:
        """The rule a verdict of this status names when the place it failed names none: the failure's kind,
        OTHER for a rejection, None for a correct verdict or a config not checked."""
        return FAILURES.get(status, cls.OTHER if status is Status.REJECTED else None)

    @classmethod
    def parse(cls, value: object, status: Status) -> Rule | None:
        """The rule a worker or a stored verdict named, or the status's own where it named none (or one that
        is no rule at all)."""
        try:
            return cls(value) if value else cls.of_status(status)
        except ValueError:
            return cls.of_status(status)


RULE_TITLES = {
    Rule.PYTORCH_COMPUTE: "PyTorch doing the work inside forward",
    Rule.INPUT_MUTATION: "forward modifying its inputs",
    Rule.SIDE_STREAM: "output not ready on the caller's stream when forward returns",
    Rule.CACHING: "results cached, or work done only when checked",
    Rule.IMPOSSIBLE_TIME: "a time under the roofline floor",
    Rule.FORGED_RESULTS: "answers forged on the harness's channel",
    Rule.TAMPERING: "patching the judge, the comparison or the timers",
    Rule.INTROSPECTION: "reading the judge's frames or live objects",
    Rule.PROCESSES_THREADS: "work on threads or processes the judge does not see",
    Rule.EARLY_EXIT: "ending the worker before it answers",
    Rule.FILE_DESCRIPTORS: "writing to or closing the harness's file descriptors",
    Rule.NETWORKING: "reaching the network",
    Rule.SANDBOX_WRITE: "writing outside its scratch folder",
    Rule.SANDBOX_READ: "reading files outside what it needs",
    Rule.SIGNALS: "handling signals",
    Rule.TIMING_CLOCK: "timing claims faster than the judge's clock",
    Rule.JUDGE_STATE: "judge state tampered (evidence the defences owe is missing)",
    Rule.OTHER: "a rule an older judge named in words only",
    Rule.WRONG_ANSWER: "outputs that differ from the reference, or that the task's validator refuses",
    Rule.DOES_NOT_BUILD: "a solution that does not parse, build or load",
    Rule.CRASH: "an error while running",
    Rule.TIME_LIMIT: "over a time limit",
    Rule.INFRASTRUCTURE: "the judge could not confine the worker (nothing of the solution ran)",
}
# Each failure's kind, by its status.
FAILURES = {
    Status.INCORRECT: Rule.WRONG_ANSWER,
    Status.COMPILE_ERROR: Rule.DOES_NOT_BUILD,
    Status.RUNTIME_ERROR: Rule.CRASH,
    Status.TIMEOUT: Rule.TIME_LIMIT,
}
# Rules that name what went wrong rather than a rule broken.
FAILURE_KINDS = frozenset({*FAILURES.values(), Rule.INFRASTRUCTURE})
