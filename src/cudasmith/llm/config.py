"""Language model settings: one validated object, read from the `[llm]` table of cudasmith.toml.

Secrets never live in the file: it names the environment variable that holds each key. Base URLs may
come from the file or from the SDKs' own variables (OPENAI_BASE_URL, ANTHROPIC_BASE_URL).

    [llm]
    model = "openai:gpt-5-mini"        # what --model defaults to
    budget_usd = 5.0
    [llm.openai]
    base_url = "http://localhost:8000/v1"   # vLLM, SGLang, Ollama, …
    [llm.endpoints.deepseek]           # then --model deepseek:deepseek-chat
    base_url = "https://api.deepseek.com"
    api_key_env = "DEEPSEEK_API_KEY"
    [llm.prices."openai:gpt-5-mini"]   # US$ per million tokens (your provider's list), for the budget
    input = 0.25
    output = 2.0
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cudasmith.errors import UsageError
from cudasmith.jsontypes import JsonObject
from cudasmith.llm.base import DEFAULT_MAX_TOKENS

# A table of settings, as load_settings returns it.
SettingsModel = TypeVar("SettingsModel", bound=BaseModel)

# Where settings come from when no --config is given: this variable, else this file in the current directory.
CONFIG_ENV = "CUDASMITH_CONFIG"
CONFIG_FILE = "cudasmith.toml"
# The key variables and base-URL variables of each API, as their SDKs name them.
DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
BASE_URL_ENV = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
# Used with `hf:` when neither --model nor the config names a model: an instruction-tuned code model
# that fits one GPU of 24 GB and up in bfloat16.
DEFAULT_HF_MODEL = "Qwen/Qwen2.5-Coder-7B-Instruct"
# Per call: the time one answer may take (reasoning models think for minutes), the retries after a
# rate limit or server error, and the backoff between them (doubling from the first, up to the cap).
TIMEOUT_S = 600.0
MAX_RETRIES = 4
BACKOFF_INITIAL_S = 1.0
BACKOFF_MAX_S = 60.0
# Calls in flight at once, per client.
MAX_CONCURRENCY = 8


class StrictSettings(BaseModel):
    """A table of settings: an unknown key is an error (a typo never passes silently), values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Endpoint(StrictSettings):
    """An API endpoint: which API it speaks, where it is, and which variable holds its key."""

    api: Literal["openai", "anthropic"] = "openai"
    base_url: str | None = None
    api_key_env: str | None = None
    reasoning: bool | None = Field(
        None, description="OpenAI API: the model takes reasoning parameters (None: judged from its name)."
    )

    def key_env(self) -> str:
        """The environment variable that holds this endpoint's key."""
        return self.api_key_env or DEFAULT_KEY_ENV[self.api]

    def url(self) -> str | None:
        """The base URL: from the config, else the SDK's own variable, else the SDK's default."""
        return self.base_url or os.environ.get(BASE_URL_ENV[self.api]) or None


class Price(StrictSettings):
    """US dollars per million tokens."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)


class LocalModel(StrictSettings):
    """Settings of `hf:` models run in this process with transformers."""

    device: str | None = Field(None, description="cuda or cpu (default: cuda when a GPU is visible).")
    dtype: str = Field("auto", description="torch dtype of the weights, or 'auto' for the checkpoint's.")


class LLMConfig(StrictSettings):
    """Everything the language model side needs; defaults work with nothing configured."""

    model: str | None = None
    max_tokens: int = Field(DEFAULT_MAX_TOKENS, ge=1)
    temperature: float | None = Field(None, ge=0)
    reasoning_effort: str | None = None
    thinking_budget: int | None = Field(None, ge=1024)
    timeout_s: float = Field(TIMEOUT_S, gt=0)
    max_retries: int = Field(MAX_RETRIES, ge=0)
    backoff_initial_s: float = Field(BACKOFF_INITIAL_S, ge=0)
    backoff_max_s: float = Field(BACKOFF_MAX_S, ge=0)
    max_concurrency: int = Field(MAX_CONCURRENCY, ge=1)
    budget_usd: float | None = Field(None, gt=0)
    openai: Endpoint = Endpoint(api="openai")
    anthropic: Endpoint = Endpoint(api="anthropic")
    endpoints: dict[str, Endpoint] = Field(default_factory=dict)
    prices: dict[str, Price] = Field(default_factory=dict)
    hf: LocalModel = LocalModel()

    def endpoint(self, name: str) -> Endpoint | None:
        """The endpoint a model spec's prefix names, or None when it names no API endpoint."""
        if name in self.endpoints:
            return self.endpoints[name]
        return {"openai": self.openai, "anthropic": self.anthropic}.get(name)

    def default_model(self) -> str:
        """The model used when none is named: the config's, else the local default."""
        return self.model or f"hf:{DEFAULT_HF_MODEL}"


def config_path(explicit: str | Path | None = None) -> Path | None:
    """The settings file in force: --config, else $CUDASMITH_CONFIG, else ./cudasmith.toml if present."""
    if explicit is not None:
        path = Path(explicit)
        if not path.is_file():
            raise UsageError(f"config file not found: {path}")
        return path
    if os.environ.get(CONFIG_ENV):
        path = Path(os.environ[CONFIG_ENV])
        if not path.is_file():
            raise UsageError(f"config file not found: {path} (from ${CONFIG_ENV})")
        return path
    local = Path(CONFIG_FILE)
    return local if local.is_file() else None


def read_config_table(table: str, explicit: str | Path | None = None) -> tuple[JsonObject, Path | None]:
    """One top-level table of the settings file (empty when there is no file) and the file's path."""
    path = config_path(explicit)
    if path is None:
        return {}, None
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"{path}: not a readable TOML file ({exc})") from None
    value = data.get(table, {})
    if not isinstance(value, dict):
        raise UsageError(f"{path}: [{table}] must be a table")
    return value, path


def load_settings(
    settings: type[SettingsModel], table: str, explicit: str | Path | None, overrides: Mapping[str, object]
) -> SettingsModel:
    """The `[table]` settings as `settings`, validated, overrides (those not None) winning over the file;
    a one-line UsageError naming the key that is wrong."""
    values, path = read_config_table(table, explicit)
    values = {**values, **{k: v for k, v in overrides.items() if v is not None}}
    try:
        return settings.model_validate(values)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"]) or table
        source = f"{path}: " if path else ""
        raise UsageError(f"{source}{table}.{where}: {error['msg']}") from None


def load_llm_config(explicit: str | Path | None = None, **overrides: Any) -> LLMConfig:
    """The `[llm]` settings, validated; keyword overrides (not None) win over the file."""
    return load_settings(LLMConfig, "llm", explicit, overrides)
