"""What the client and the server of `cudasmith serve` agree on, in the standard library only (the client
runs in a trainer's process, where neither FastAPI nor torch need be installed): where the server
listens by default, the routes, a submission's states and the token's variable."""

from __future__ import annotations

from enum import Enum

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
# Where the client reads its bearer token when none is given (a secret: an environment variable, never a
# file the client is pointed at by a flag a shell history keeps).
TOKEN_ENV = "CUDASMITH_TOKEN"
# Routes, below the server's URL.
VERDICTS = "/v1/verdicts"
HEALTH = "/v1/health"
METRICS = "/v1/metrics"
# The most candidates one POST may carry; the client splits larger batches.
MAX_BATCH = 500
# A server's limits unless its command line says otherwise: a solution's (or a problem's) source beyond
# MAX_SOURCE_BYTES is refused (413: no kernel needs more, and every byte is stored); at most MAX_QUEUE
# submissions wait (429 beyond); a session that judged nothing for IDLE_S seconds is closed.
MAX_SOURCE_BYTES = 1024 * 1024
MAX_QUEUE = 4096
IDLE_S = 600.0
# The longest `?wait=S` the server honours in one request (a client waiting longer asks again).
MAX_WAIT_S = 60.0


class State(str, Enum):
    """Where a submission stands: waiting for a lane (or for an identical submission's verdict), being
    judged, done (its verdict is stored), or failed (the judge itself failed; the error says why, and the
    same candidate may be submitted again)."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"

    def __str__(self) -> str:
        return self.value

    @property
    def finished(self) -> bool:
        """Whether the submission will not change any more."""
        return self in (State.DONE, State.FAILED)
