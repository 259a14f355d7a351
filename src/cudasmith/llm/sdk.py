"""What the OpenAI and Anthropic providers share: their official SDKs, built alike, fail alike.

The SDKs are imported here, lazily, so that `import cudasmith` and the harness work where they are
not installed (GPU workers need neither).
"""

from __future__ import annotations

import importlib
import os
import re
from types import ModuleType
from typing import Any, ClassVar

from cudasmith.errors import UsageError
from cudasmith.llm.base import Provider, ProviderError, is_retryable_status, one_line, parse_retry_after
from cudasmith.llm.config import Endpoint

# Local OpenAI-compatible servers take any key, but the SDK insists on one.
PLACEHOLDER_KEY = "no-key"


def import_sdk(name: str, spec: str) -> ModuleType:
    """The SDK module, or a UsageError that says how to install it."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise UsageError(
            f"{spec} needs the {name} package: pip install {name} (or pip install cudasmith)"
        ) from None


def api_key(endpoint: Endpoint, spec: str, optional: bool) -> str:
    """The endpoint's key from its environment variable; a one-line UsageError naming it when absent.

    `optional`: a server at a configured base URL may need no key (vLLM, SGLang, Ollama)."""
    variable = endpoint.key_env()
    key = os.environ.get(variable, "").strip()
    if key:
        return key
    if optional:
        return PLACEHOLDER_KEY
    raise UsageError(
        f"{spec}: no API key: set {variable}"
        + (
            " (or base_url in [llm.openai] of cudasmith.toml, or OPENAI_BASE_URL, for a local server)"
            if endpoint.api == "openai"
            else ""
        )
    )


def _status_text(exc: Any) -> str:
    """The server's own message: the `message` of an error body when there is one."""
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    return re.sub(r"^Error code: \d+ - ", "", str(getattr(exc, "message", exc)))


def provider_error(
    exc: Exception, sdk: ModuleType, where: str, key_env: str, secrets: tuple[str, ...]
) -> ProviderError:
    """A ProviderError for an SDK exception: its HTTP status, whether to retry, and a clean line."""
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        message = one_line(_status_text(exc), secrets)
        retry_after = parse_retry_after(exc.response.headers.get("retry-after"))
        if status in (401, 403):
            message = f"the key in {key_env} was refused: {message}"
        return ProviderError(
            f"HTTP {status} from {where}: {message}",
            retryable=is_retryable_status(status),
            status=status,
            retry_after_s=retry_after,
        )
    if isinstance(exc, sdk.APIResponseValidationError):
        return ProviderError(f"{where} sent an answer that is not one: {one_line(str(exc), secrets)}", False)
    if isinstance(exc, sdk.APIConnectionError):  # timeouts included
        cause = exc.__cause__ or exc
        return ProviderError(
            f"cannot reach {where}: {one_line(str(cause) or type(cause).__name__, secrets)}", True
        )
    return ProviderError(f"{where}: {type(exc).__name__}: {one_line(str(exc), secrets)}", False)


class SdkProvider(Provider):
    """A provider through an official SDK: the SDK imported, the endpoint's URL and key read, and the
    SDK's async client made to neither retry nor time out (our client does both: the SDK's own retries
    would hide failures from it)."""

    sdk_name: ClassVar[str]
    client_class: ClassVar[str]
    # Named in messages where no base URL is configured.
    default_where: ClassVar[str]
    # Whether a server at a configured base URL may need no key (vLLM, SGLang, Ollama).
    keyless_servers: ClassVar[bool] = False

    def __init__(self, spec: str, model: str, endpoint: Endpoint) -> None:
        self.spec = spec
        self.model = model
        self._sdk = import_sdk(self.sdk_name, spec)
        self._base_url = endpoint.url()
        self._key_env = endpoint.key_env()
        self._key = api_key(endpoint, spec, optional=self.keyless_servers and self._base_url is not None)
        self._client = getattr(self._sdk, self.client_class)(
            api_key=self._key, base_url=self._base_url, max_retries=0, timeout=None
        )
        self._where = self._base_url or self.default_where

    def _error(self, exc: Exception) -> ProviderError:
        """The ProviderError for an exception of the SDK, the key kept out of its message."""
        return provider_error(exc, self._sdk, self._where, self._key_env, (self._key,))

    async def close(self) -> None:
        await self._client.close()
