"""The OpenAI Chat Completions API through the official SDK: OpenAI itself and any compatible server
(vLLM, SGLang, Ollama, OpenRouter, DeepSeek, …) at a configured base URL.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from cudasmith.jsontypes import JsonDict
from cudasmith.llm.base import (
    Completion,
    ProviderError,
    Request,
    normalise_finish_reason,
    one_line,
    split_usage,
)
from cudasmith.llm.config import Endpoint
from cudasmith.llm.sdk import SdkProvider

log = logging.getLogger("cudasmith.llm")

# OpenAI's reasoning families (o1, o3, o4-mini, gpt-5…), also behind a router's "openai/" prefix: they
# take max_completion_tokens and reasoning_effort, and refuse a temperature other than the default.
REASONING_MODEL = re.compile(r"^(?:openai/)?(?:o\d|gpt-5)")
# Completions asked for in one call; more are split over several calls.
MAX_N_PER_CALL = 16
# Parameters a server may refuse with HTTP 400, and what to send instead (None: leave it out).
FALLBACKS = {
    "temperature": None,
    "reasoning_effort": None,
    "max_tokens": "max_completion_tokens",
    "max_completion_tokens": "max_tokens",
}


def _refused_parameter(exc: Any, params: JsonDict) -> str | None:
    """The parameter that a 400 answer says is unsupported, when it is one we can do without."""
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    named = error.get("param") if isinstance(error, dict) else None
    if named in FALLBACKS and named in params:
        return named
    message = str(getattr(exc, "message", "")).lower()
    if "unsupported" not in message and "not supported" not in message:
        return None
    return next((p for p in FALLBACKS if p in params and f"'{p}'" in message), None)


class OpenAIProvider(SdkProvider):
    """`openai:<model>`; or `<name>:<model>` for an endpoint named in the config."""

    max_n_per_call = MAX_N_PER_CALL
    sdk_name = "openai"
    client_class = "AsyncOpenAI"
    default_where = "the OpenAI API"
    keyless_servers = True

    def __init__(self, spec: str, model: str, endpoint: Endpoint) -> None:
        super().__init__(spec, model, endpoint)
        self.reasoning = (
            endpoint.reasoning if endpoint.reasoning is not None else bool(REASONING_MODEL.match(model))
        )
        self._replaced: dict[str, str | None] = {}

    def _params(self, request: Request) -> JsonDict:
        """The request's body as the Chat Completions API takes it."""
        params: JsonDict = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        }
        if request.n > 1:
            params["n"] = request.n
        if self.reasoning:
            params["max_completion_tokens"] = request.max_tokens
            if request.reasoning_effort:
                params["reasoning_effort"] = request.reasoning_effort
        else:
            params["max_tokens"] = request.max_tokens
            if request.temperature is not None:
                params["temperature"] = request.temperature
        for name, replacement in self._replaced.items():
            if name in params:
                value = params.pop(name)
                if replacement is not None:
                    params[replacement] = value
        return params

    async def sample(self, request: Request) -> list[Completion]:
        params = self._params(request)
        while True:
            try:
                response = await self._client.chat.completions.create(**params)
                break
            except self._sdk.BadRequestError as exc:
                refused = _refused_parameter(exc, params)
                if refused is None or refused in self._replaced or FALLBACKS[refused] in self._replaced:
                    raise self._error(exc) from None
                # Learn it once: later calls of this provider leave it out or rename it.
                self._replaced[refused] = FALLBACKS[refused]
                log.info(
                    "%s: the server refused %r; sending %s",
                    self.spec,
                    refused,
                    FALLBACKS[refused] or "nothing",
                )
                params = self._params(request)
            except self._sdk.OpenAIError as exc:
                raise self._error(exc) from None
        return self._completions(response)

    def _completions(self, response: Any) -> list[Completion]:
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise ProviderError(
                f"{self._where} sent an answer that is not a chat completion: {one_line(repr(response))}",
                False,
            )
        try:
            texts = [choice.message.content or "" for choice in choices]
            reasons = [normalise_finish_reason(choice.finish_reason) for choice in choices]
        except AttributeError as exc:
            raise ProviderError(f"{self._where} sent a malformed chat completion ({exc})", False) from None
        usage = getattr(response, "usage", None)
        weights = [len(text) for text in texts]
        inputs = split_usage(getattr(usage, "prompt_tokens", None), [1] * len(texts))
        outputs = split_usage(getattr(usage, "completion_tokens", None), weights)
        # OpenRouter and some gateways report what the call cost.
        reported = (getattr(usage, "model_extra", None) or {}).get("cost") if usage is not None else None
        costs: list[float | None] = [None] * len(texts)
        if isinstance(reported, (int, float)):
            tokens = [(i or 0) + (o or 0) for i, o in zip(inputs, outputs, strict=True)]
            costs = [float(reported) * t / (sum(tokens) or 1) for t in tokens]
        return [
            Completion(
                text=text,
                finish_reason=reason,
                model=getattr(response, "model", None) or self.model,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cost_usd=cost,
            )
            for text, reason, input_tokens, output_tokens, cost in zip(
                texts, reasons, inputs, outputs, costs, strict=True
            )
        ]
