"""Language models behind one small interface, chosen by a model spec `PROVIDER:MODEL`:

    openai:<model>      OpenAI, or any OpenAI-compatible server at a configured base URL
    anthropic:<model>   Anthropic, with an optional thinking budget
    hf:<model>          a local Hugging Face model through transformers (the default)
    replay:<path>       answers recorded earlier, served back in order
    <name>:<model>      an endpoint named in [llm.endpoints.<name>] of cudasmith.toml

    config = load_llm_config()
    async with make_client("openai:gpt-5-mini", config) as client:
        response = await client.complete(Request(messages=(Message("user", "…"),), n=4))

The SDKs are imported only when a provider is made.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from cudasmith.errors import UsageError
from cudasmith.llm.base import Completion, Message, Provider, Request
from cudasmith.llm.client import Budget, LLMClient, Response
from cudasmith.llm.config import LLMConfig, load_llm_config

PROVIDER_KINDS = ("openai", "anthropic", "hf", "replay")

__all__ = [
    "Budget",
    "Completion",
    "LLMClient",
    "LLMConfig",
    "Message",
    "Provider",
    "Request",
    "Response",
    "load_llm_config",
    "make_client",
    "make_provider",
    "request_for",
]


def _parts(spec: str, config: LLMConfig) -> tuple[str, str]:
    """A model spec's provider and model; a one-line UsageError naming --model for one not so written."""
    kind, separator, name = spec.partition(":")
    if not separator or not name:
        example = config.default_model().split(":", 1)[1]
        raise UsageError(f"--model {spec!r} must be PROVIDER:MODEL, e.g. openai:gpt-5-mini or hf:{example}")
    return kind, name


def check_model(spec: str, config: LLMConfig) -> None:
    """What `make_provider` would refuse of a model spec, found without importing an SDK, transformers
    or torch (seconds each), so that a command's usage error comes at once: its form, its provider, a
    missing API key, transformers missing for `hf:`."""
    from cudasmith.llm.local_hf import transformers_missing
    from cudasmith.llm.sdk import api_key

    kind, _ = _parts(spec, config)
    endpoint = config.endpoint(kind)
    if endpoint is not None:  # OpenAI-compatible servers at a base URL may need no key, as the provider says
        api_key(endpoint, spec, optional=endpoint.api == "openai" and endpoint.url() is not None)
    elif kind == "hf" and importlib.util.find_spec("transformers") is None:
        raise transformers_missing(spec)
    elif kind not in PROVIDER_KINDS:
        raise _unknown_provider(kind, spec, config)


def _unknown_provider(kind: str, spec: str, config: LLMConfig) -> UsageError:
    known = ", ".join([*PROVIDER_KINDS, *config.endpoints])
    return UsageError(f"unknown model provider {kind!r} in {spec!r}; known: {known}")


def make_provider(spec: str, config: LLMConfig) -> Provider:
    """The provider a model spec names; a one-line UsageError for a spec that names none."""
    kind, name = _parts(spec, config)
    endpoint = config.endpoint(kind)
    if endpoint is not None and endpoint.api == "openai":
        from cudasmith.llm.openai_api import OpenAIProvider

        return OpenAIProvider(spec, name, endpoint)
    if endpoint is not None:
        from cudasmith.llm.anthropic_api import AnthropicProvider

        return AnthropicProvider(spec, name, endpoint)
    if kind == "hf":
        from cudasmith.llm.local_hf import HFProvider

        return HFProvider(spec, name, config.hf)
    if kind == "replay":
        from cudasmith.llm.replay import ReplayProvider

        return ReplayProvider(spec, name)
    raise _unknown_provider(kind, spec, config)


def make_client(
    spec: str | None, config: LLMConfig, record_path: Path | None = None, budget: Budget | None = None
) -> LLMClient:
    """A client for `spec` (or the configured default model) with the config's retries, limits and budget."""
    return LLMClient(make_provider(spec or config.default_model(), config), config, budget, record_path)


def request_for(messages: tuple[Message, ...], n: int, config: LLMConfig) -> Request:
    """A request with the config's sampling settings."""
    return Request(
        messages=messages,
        n=n,
        max_tokens=config.max_tokens,
        temperature=config.temperature,
        reasoning_effort=config.reasoning_effort,
        thinking_budget=config.thinking_budget,
    )
