"""The provider interface: a request in, up to n completions out, each with its usage, cost and timing.

A provider makes one call to one backend and reports failures as `ProviderError`, saying whether a
retry may help. Retries, timeouts, the concurrency limit and the budget live in `LLMClient`, once for
every provider.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from cudasmith.errors import LLMError
from cudasmith.jsontypes import JsonDict, JsonObject
from cudasmith.store.shapes import CompletionFields

# Provider messages are trimmed to this many characters so an error stays one readable line.
ERROR_MESSAGE_CHARS = 300
# HTTP statuses worth a retry: request timeout, conflict, too early, rate limit, and server errors.
RETRYABLE_STATUSES = frozenset({408, 409, 425, 429})
# Finish reasons of the providers, in our two words where they mean the same.
FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "eos": "stop"}
# Tokens a completion may use unless configured: room for a reasoning model's thinking and a whole
# solution file after it.
DEFAULT_MAX_TOKENS = 16384


@dataclass(frozen=True)
class Message:
    """One chat message: role is 'system', 'user' or 'assistant'."""

    role: str
    content: str


@dataclass(frozen=True)
class Request:
    """What to ask: the conversation, how many completions, and the sampling settings.

    `None` leaves a setting to the provider's default; reasoning settings go only to models that take them.
    """

    messages: tuple[Message, ...]
    n: int = 1
    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float | None = None
    reasoning_effort: str | None = None
    thinking_budget: int | None = None

    def with_n(self, n: int) -> Request:
        """The same request for another number of completions."""
        return replace(self, n=n)

    @property
    def system(self) -> str:
        """The system messages joined (providers that take the system prompt apart need it)."""
        return "\n\n".join(m.content for m in self.messages if m.role == "system")

    @property
    def conversation(self) -> list[Message]:
        """The messages that are not system messages."""
        return [m for m in self.messages if m.role != "system"]


@dataclass
class Completion:
    """One answer of a model, with what it cost."""

    text: str
    finish_reason: str
    model: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    latency_s: float = 0.0
    # What the provider said besides (its own keys: reasoning tokens, a response id…).
    extra: JsonDict = field(default_factory=dict)

    @property
    def truncated(self) -> bool:
        """True when the model stopped because it ran out of tokens."""
        return self.finish_reason == "length"

    def to_dict(self) -> CompletionFields:
        """The JSON form, as recorded, replayed and stored."""
        return CompletionFields(
            text=self.text,
            finish_reason=self.finish_reason,
            model=self.model,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_usd=self.cost_usd,
            latency_s=self.latency_s,
            extra=self.extra,
        )

    @classmethod
    def from_dict(cls, data: CompletionFields | JsonObject) -> Completion:
        """A completion from its recorded JSON form, or a stored one's fields (unknown keys are ignored)."""
        return cls(
            text=data.get("text", ""),
            finish_reason=data.get("finish_reason") or "stop",
            model=data.get("model") or "",
            input_tokens=data.get("input_tokens"),
            output_tokens=data.get("output_tokens"),
            cost_usd=data.get("cost_usd"),
            latency_s=data.get("latency_s") or 0.0,
            extra=data.get("extra") or {},
        )


class ProviderError(LLMError):
    """One failed call; `retryable` says whether the same call may succeed later."""

    def __init__(
        self, message: str, retryable: bool, status: int | None = None, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.retry_after_s = retry_after_s


class Provider(ABC):
    """A backend that turns a request into completions. `max_n_per_call` bounds one call's n."""

    spec: str
    max_n_per_call: int = 1

    @abstractmethod
    async def sample(self, request: Request) -> list[Completion]:
        """One call for `request.n` completions (it may return fewer; the client asks again for the rest)."""

    async def start(self) -> None:
        """Work before the first call, outside any call's timeout (loading a local model's weights)."""
        return None

    async def close(self) -> None:
        """Release connections or models; the provider is not used afterwards."""
        return None


def normalise_finish_reason(reason: str | None) -> str:
    """'stop' or 'length' where the provider means that, else the provider's own word."""
    if reason is None:
        return "unknown"
    return FINISH_REASONS.get(reason, reason)


def is_retryable_status(status: int) -> bool:
    """Rate limits, timeouts and server errors pass; bad requests and auth failures do not."""
    return status in RETRYABLE_STATUSES or status >= 500


def one_line(text: str, secrets: tuple[str, ...] = ()) -> str:
    """`text` as one trimmed line, with every secret blanked out."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    line = re.sub(r"\s+", " ", text).strip()
    return line if len(line) <= ERROR_MESSAGE_CHARS else line[: ERROR_MESSAGE_CHARS - 1] + "…"


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header given in seconds (the HTTP-date form is ignored)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def split_usage(total: int | None, weights: list[int]) -> Sequence[int | None]:
    """One call's token count shared out over its choices by weight; the shares add up to the total."""
    if total is None:
        return [None] * len(weights)
    if sum(weights) == 0:
        weights = [1] * len(weights)
    shares = [total * weight // sum(weights) for weight in weights]
    shares[0] += total - sum(shares)
    return shares
