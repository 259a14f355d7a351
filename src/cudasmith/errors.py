"""The exception tree: one root, a few branches a caller can act on."""

from __future__ import annotations


class CudasmithError(Exception):
    """Root of every error cudasmith raises on purpose; its message is one line a person can act on."""


class UsageError(CudasmithError):
    """Bad input from the user: a missing file, an unknown task, a device that is not there."""


class ProblemError(UsageError):
    """A problem file that does not follow the problem contract."""


# A compile error's message is the compiler's first error line, cut to this many characters.
ERROR_MESSAGE_CHARS = 300


class CompileError(CudasmithError):
    """Kernel source that the compiler rejected; `log` holds the compiler's own words."""

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log

    @classmethod
    def from_log(cls, compiler: str, log: str) -> CompileError:
        """'compiler: <its first error line>', the whole log kept."""
        lines = log.strip().splitlines()
        first = next(
            (line.strip() for line in lines if "error" in line), lines[0] if lines else "(no output)"
        )
        return cls(f"{compiler}: {first[:ERROR_MESSAGE_CHARS]}", log=log)


class ForbiddenBuild(CudasmithError):
    """A build the rules refuse: linking PyTorch's libraries, whose compute would pass for the solution's own."""


class NoGpuError(CudasmithError):
    """Code that needs a CUDA GPU (compiling for the current one, launching on it) where none is visible."""


class KernelLaunchError(CudasmithError):
    """A kernel launch that the driver refused (bad arguments, too many threads, …)."""


class HarnessError(CudasmithError):
    """The judge itself failed (not the candidate): a reference that does not run, a broken worker."""


class LLMError(CudasmithError):
    """A language model request that failed for good: retries spent, a timeout, an answer that is not one."""


class BudgetExhausted(LLMError):
    """The run's cost budget is spent: no further requests are sent, finished work stays."""
