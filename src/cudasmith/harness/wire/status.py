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
