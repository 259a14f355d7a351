"""The OpenAI and Anthropic providers over real HTTP, through the official SDKs, against a fake server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from cudasmith.errors import LLMError, UsageError
from cudasmith.llm import LLMConfig, Message, Response, load_llm_config, make_client, request_for

from fake_llm import FakeLLMServer, Reply, anthropic_body, openai_body

OPENAI_KEY = "sk-test-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-test-0123456789abcdef"
MESSAGES = (Message("system", "You write CUDA kernels."), Message("user", "Write a softmax."))
# Short limits keep the failure paths quick.
TIMEOUT_S = 0.5
RETRIES = 2


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    with FakeLLMServer().running() as fake:
        yield fake


def config_for(server: FakeLLMServer, **overrides: Any) -> LLMConfig:
    settings: dict[str, Any] = {
        "openai": {"base_url": f"{server.url}/v1"},
        "anthropic": {"api": "anthropic", "base_url": server.url},
        "timeout_s": TIMEOUT_S,
        "max_retries": RETRIES,
        "backoff_initial_s": 0.01,
        **overrides,
    }
    return load_llm_config(**settings)


def ask(server: FakeLLMServer, spec: str, n: int = 1, **overrides: Any) -> Response:
    """One request with the config's sampling settings and 1000 tokens for the answer."""
    config = config_for(server, max_tokens=1000, **overrides)

    async def run() -> Response:
        async with make_client(spec, config) as client:
            return await client.complete(request_for(MESSAGES, n, config))

    return asyncio.run(run())


def answer(kind: str, text: str, **usage: Any) -> Reply:
    return Reply(openai_body(text, **usage) if kind == "openai" else anthropic_body(text, **usage))


def error_body(kind: str, message: str) -> dict[str, Any]:
    if kind == "openai":
        return {"error": {"message": message, "type": "server_error", "param": None, "code": None}}
    return {"type": "error", "error": {"type": "api_error", "message": message}}


KINDS = ["openai", "anthropic"]
SPECS = {"openai": "openai:fake-gpt", "anthropic": "anthropic:fake-claude"}


@pytest.mark.parametrize("kind", KINDS)
def test_success_returns_text_usage_and_finish_reason(server: FakeLLMServer, kind: str) -> None:
    server.push(answer(kind, "```python\nclass ModelNew: ...\n```"))
    response = ask(server, SPECS[kind])
    [completion] = response.completions
    assert completion.text == "```python\nclass ModelNew: ...\n```"
    assert completion.finish_reason == "stop"
    assert (completion.input_tokens, completion.output_tokens) == (100, 50)
    assert completion.latency_s > 0
    assert completion.cost_usd is None  # no price configured, none reported
    [request] = server.seen
    if kind == "openai":
        assert request.path == "/v1/chat/completions"
        assert request.headers["authorization"] == f"Bearer {OPENAI_KEY}"
        assert request.body["messages"][0] == {"role": "system", "content": "You write CUDA kernels."}
        assert request.body["max_tokens"] == 1000
    else:
        assert request.path == "/v1/messages"
        # Older SDKs send the key as x-api-key, newer ones as a bearer token.
        assert ANTHROPIC_KEY in request.headers.get("x-api-key", "") + request.headers.get(
            "authorization", ""
        )
        assert request.body["system"] == "You write CUDA kernels."
        assert request.body["messages"] == [{"role": "user", "content": "Write a softmax."}]


@pytest.mark.parametrize("kind", KINDS)
def test_rate_limit_then_success_is_retried(server: FakeLLMServer, kind: str) -> None:
    server.push(Reply(error_body(kind, "slow down"), 429, {"retry-after": "0"}), answer(kind, "done"))
    response = ask(server, SPECS[kind])
    assert [c.text for c in response.completions] == ["done"]
    assert len(server.seen) == 2


@pytest.mark.parametrize("kind", KINDS)
def test_server_errors_until_the_retry_budget_ends(server: FakeLLMServer, kind: str) -> None:
    server.default = Reply(error_body(kind, "the GPU fell over"), 500)
    with pytest.raises(LLMError) as error:
        ask(server, SPECS[kind])
    message = str(error.value)
    assert len(server.seen) == RETRIES + 1
    assert "HTTP 500" in message and "the GPU fell over" in message
    assert f"after {RETRIES + 1} attempts" in message
    assert "\n" not in message


@pytest.mark.parametrize("kind", KINDS)
def test_a_hung_server_hits_the_timeout_and_the_request_is_cancelled(
    server: FakeLLMServer, kind: str
) -> None:
    server.default = Reply(hang=True)
    with pytest.raises(LLMError, match=r"no answer within 0.5 s"):
        ask(server, SPECS[kind], max_retries=0)
    deadline = time.monotonic() + 60  # a guard, not a speed claim: the loop ends when the hangup comes
    while server.hangups < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.hangups == 1, "the client must close the connection, not leave the request running"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("body", ["<html>502 Bad Gateway</html>", {"unexpected": True}])
def test_a_malformed_body_is_a_clear_error_not_a_crash(server: FakeLLMServer, kind: str, body: Any) -> None:
    server.default = Reply(body)
    with pytest.raises(LLMError, match="sent an answer that is not") as error:
        ask(server, SPECS[kind])
    assert len(server.seen) == 1, "a malformed answer is not retried"
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("kind", KINDS)
def test_a_refused_key_is_reported_without_the_key(server: FakeLLMServer, kind: str) -> None:
    key = OPENAI_KEY if kind == "openai" else ANTHROPIC_KEY
    server.default = Reply(error_body(kind, f"invalid key {key}"), 401)
    with pytest.raises(LLMError) as error:
        ask(server, SPECS[kind])
    assert key not in str(error.value)
    assert ("OPENAI_API_KEY" if kind == "openai" else "ANTHROPIC_API_KEY") in str(error.value)
    assert len(server.seen) == 1


@pytest.mark.parametrize(
    ("kind", "variable"), [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")]
)
def test_a_missing_key_names_the_variable_to_set(
    monkeypatch: pytest.MonkeyPatch, kind: str, variable: str
) -> None:
    monkeypatch.delenv(variable, raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(UsageError, match=f"set {variable}"):
        make_client(SPECS[kind], LLMConfig())


def test_openai_n_completions_in_one_call_with_usage_shared_out(server: FakeLLMServer) -> None:
    server.push(Reply(openai_body("a" * 30, "b" * 10, prompt_tokens=101, completion_tokens=40)))
    response = ask(server, "openai:fake-gpt", n=2)
    assert [c.text for c in response.completions] == ["a" * 30, "b" * 10]
    assert sum(c.input_tokens for c in response.completions) == 101
    assert [c.output_tokens for c in response.completions] == [30, 10]
    assert server.seen[0].body["n"] == 2


def test_a_server_that_ignores_n_is_asked_again_for_the_rest(server: FakeLLMServer) -> None:
    server.push(*(Reply(openai_body(f"answer {k}")) for k in range(3)))
    response = ask(server, "openai:fake-gpt", n=3)
    assert sorted(c.text for c in response.completions) == ["answer 0", "answer 1", "answer 2"]
    assert [r.body.get("n") for r in server.seen] == [3, None, None]


def test_reasoning_models_get_the_parameters_they_accept(server: FakeLLMServer) -> None:
    server.push(Reply(openai_body("x")))
    ask(server, "openai:o4-mini", temperature=0.7, reasoning_effort="high")
    body = server.seen[0].body
    assert body["max_completion_tokens"] == 1000 and "max_tokens" not in body
    assert body["reasoning_effort"] == "high"
    assert "temperature" not in body


def test_a_refused_temperature_is_dropped_and_remembered(server: FakeLLMServer) -> None:
    refusal = {
        "error": {
            "message": "Unsupported value: 'temperature' does not support 0.7 with this model.",
            "type": "invalid_request_error",
            "param": "temperature",
            "code": "unsupported_value",
        }
    }
    server.push(Reply(refusal, 400), Reply(openai_body("x")))
    ask(server, "openai:some-new-model", temperature=0.7)
    assert [("temperature" in r.body) for r in server.seen] == [True, False]


def test_anthropic_thinking_budget_and_text_blocks(server: FakeLLMServer) -> None:
    server.push(*(Reply(anthropic_body(f"answer {k}", thinking="let me think")) for k in range(2)))
    response = ask(server, "anthropic:fake-claude", n=2, thinking_budget=2048, temperature=0.5)
    assert sorted(c.text for c in response.completions) == ["answer 0", "answer 1"]
    assert len(server.seen) == 2, "one call per completion"
    body = server.seen[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 1000 + 2048
    assert "temperature" not in body


def test_openai_reported_cost_and_configured_prices(server: FakeLLMServer) -> None:
    server.push(Reply(openai_body("x", cost=0.0123)))
    [reported] = ask(server, "openai:fake-gpt").completions
    assert reported.cost_usd == pytest.approx(0.0123)
    server.push(Reply(openai_body("x", prompt_tokens=1_000_000, completion_tokens=500_000)))
    prices = {"openai:fake-gpt": {"input": 2.0, "output": 8.0}}
    [priced] = ask(server, "openai:fake-gpt", prices=prices).completions
    assert priced.cost_usd == pytest.approx(2.0 + 4.0)


def test_a_server_refusing_both_token_limits_is_an_error_not_a_loop(server: FakeLLMServer) -> None:
    def refusal(param: str) -> Reply:
        message = f"Unsupported parameter: '{param}' is not supported with this model."
        return Reply({"error": {"message": message, "type": "invalid_request_error", "param": param}}, 400)

    server.push(refusal("max_tokens"), refusal("max_completion_tokens"))
    with pytest.raises(LLMError, match="HTTP 400"):
        ask(server, "openai:odd-model")
    assert [sorted(k for k in r.body if k.startswith("max_")) for r in server.seen] == [
        ["max_tokens"],
        ["max_completion_tokens"],
    ]
