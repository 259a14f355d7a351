"""Anthropic's Messages API through the official SDK, with an optional extended-thinking budget."""

from __future__ import annotations

from cudasmith.jsontypes import JsonDict
from cudasmith.llm.base import Completion, ProviderError, Request, normalise_finish_reason, one_line
from cudasmith.llm.sdk import SdkProvider


class AnthropicProvider(SdkProvider):
    """`anthropic:<model>`. The API returns one completion per call, so n completions take n calls.

    With a thinking budget, max_tokens counts the answer and the budget comes on top of it."""

    max_n_per_call = 1
    sdk_name = "anthropic"
    client_class = "AsyncAnthropic"
    default_where = "the Anthropic API"

    def _params(self, request: Request) -> JsonDict:
        """The request's body as the Messages API takes it."""
        params: JsonDict = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": [{"role": m.role, "content": m.content} for m in request.conversation],
        }
        if request.system:
            params["system"] = request.system
        # Passed as raw body fields, so that SDK versions that do not know them still send them.
        extra: JsonDict = {}
        if request.thinking_budget:
            params["thinking"] = {"type": "enabled", "budget_tokens": request.thinking_budget}
            params["max_tokens"] = request.max_tokens + request.thinking_budget
        elif request.temperature is not None:
            # Thinking refuses a temperature; without thinking, models that take one get it.
            extra["temperature"] = request.temperature
        if request.reasoning_effort:
            extra["output_config"] = {"effort": request.reasoning_effort}
        if extra:
            params["extra_body"] = extra
        return params

    async def sample(self, request: Request) -> list[Completion]:
        try:
            message = await self._client.messages.create(**self._params(request))
        except self._sdk.AnthropicError as exc:
            raise self._error(exc) from None
        content = getattr(message, "content", None)
        if not isinstance(content, list):
            raise ProviderError(
                f"{self._where} sent an answer that is not a message: {one_line(repr(message))}", False
            )
        # Thinking blocks are the model's scratch work; the answer is in the text blocks.
        text = "".join(block.text for block in content if getattr(block, "type", None) == "text")
        usage = getattr(message, "usage", None)
        return [
            Completion(
                text=text,
                finish_reason=normalise_finish_reason(getattr(message, "stop_reason", None)),
                model=getattr(message, "model", None) or self.model,
                input_tokens=getattr(usage, "input_tokens", None),
                output_tokens=getattr(usage, "output_tokens", None),
            )
        ]
