"""What to say when a worker goes over its host memory limit: the limit, the size, and the option.

A problem too large for the worker is not the candidate's fault, and the person reading needs one
sentence: how large the config is, how much a worker may use, and how to let it use more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cudasmith.wording import byte_size

if TYPE_CHECKING:
    from cudasmith.harness.wire.results import ConfigDescription

# The option of `cudasmith eval` that sets EvalOptions.memory_limit_bytes (in GiB).
MEMORY_LIMIT_OPTION = "--memory-limit"


def over_limit(limit_bytes: int) -> str:
    """'host memory over the worker's limit of 8.0 GiB (--memory-limit raises it)'."""
    return (
        f"host memory over the worker's limit of {byte_size(limit_bytes)} ({MEMORY_LIMIT_OPTION} raises it)"
    )


def too_large(name: str, described: ConfigDescription | None, limit_bytes: int) -> str:
    """The reference went over the limit on config `name` (described with its input and output bytes, when
    known): one sentence with the config's size, the limit and the option."""
    size = ""
    if described is not None and described.input_bytes is not None:
        size = (
            f" ({byte_size(described.input_bytes)} in, {byte_size(described.output_bytes)} out,"
            " and the reference's float64 copies)"
        )
    return (
        f"{name}{size} is too large for the worker: the reference went over its host memory limit of "
        f"{byte_size(limit_bytes)}; {MEMORY_LIMIT_OPTION} raises it"
    )
