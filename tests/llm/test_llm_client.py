"""The client's policies (budget, concurrency, recording), replay, and settings from cudasmith.toml."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from cudasmith.errors import BudgetExhausted, LLMError, UsageError
from cudasmith.llm import Budget, LLMClient, Message, Request, load_llm_config, make_client, make_provider

from fake_llm import FakeLLMServer, Reply, anthropic_body, openai_body

MESSAGES = (Message("user", "Write a softmax."),)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    with FakeLLMServer().running() as fake:
        yield fake


def settings(server: FakeLLMServer, **overrides: Any) -> Any:
    return load_llm_config(
        openai={"base_url": f"{server.url}/v1"},
        anthropic={"api": "anthropic", "base_url": server.url},
        backoff_initial_s=0.01,
        **overrides,
    )


async def complete_all(client: LLMClient, requests: list[Request]) -> list[Any]:
    async with client:
        return [await client.complete(request) for request in requests]


def test_the_budget_stops_the_run_cleanly_once_spent(server: FakeLLMServer) -> None:
    server.default = Reply(openai_body("x", prompt_tokens=100_000, completion_tokens=50_000))
    prices = {"fake-gpt": {"input": 2.0, "output": 8.0}}  # 0.2 + 0.4 = US$0.60 a call
    client = make_client("openai:fake-gpt", settings(server, prices=prices, budget_usd=1.0))

    async def run() -> list[Any]:
        done = []
        async with client:
            for _ in range(5):
                done.append(await client.complete(Request(MESSAGES)))
        return done

    with pytest.raises(BudgetExhausted, match=r"budget of \$1.00 is spent"):
        asyncio.run(run())
    assert len(server.seen) == 2, "no request is sent once the budget is spent"
    assert client.budget.spent_usd == pytest.approx(1.2)
    assert client.usage.cost_usd == pytest.approx(1.2)


def test_one_budget_is_shared_by_clients() -> None:
    budget = Budget(limit_usd=0.5)
    budget.add(0.5)
    with pytest.raises(BudgetExhausted):
        budget.check()


@pytest.mark.slow
def test_the_concurrency_limit_holds(server: FakeLLMServer) -> None:
    server.default = Reply(anthropic_body("x"), delay_s=0.2)
    client = make_client("anthropic:fake-claude", settings(server, max_concurrency=2))
    [response] = asyncio.run(complete_all(client, [Request(MESSAGES, n=6)]))
    assert len(response.completions) == 6
    assert len(server.seen) == 6
    assert server.max_active == 2


def test_partial_failures_are_reported_beside_what_came_back(server: FakeLLMServer) -> None:
    server.push(Reply(anthropic_body("good")), Reply({"type": "error", "error": {"message": "no"}}, 400))
    client = make_client("anthropic:fake-claude", settings(server, max_concurrency=1))
    [response] = asyncio.run(complete_all(client, [Request(MESSAGES, n=2)]))
    assert [c.text for c in response.completions] == ["good"]
    assert len(response.errors) == 1 and "HTTP 400" in response.errors[0]


def test_recorded_answers_replay_in_order(server: FakeLLMServer, tmp_path: Path) -> None:
    server.push(
        Reply(openai_body("first", "second")),
        Reply(openai_body("third", finish_reason="length")),
    )
    record = tmp_path / "run" / "responses.jsonl"
    config = settings(server)
    recorder = make_client("openai:fake-gpt", config, record_path=record)
    asyncio.run(complete_all(recorder, [Request(MESSAGES, n=2), Request(MESSAGES, n=1)]))
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [len(line["completions"]) for line in lines] == [2, 1]
    assert "sk-test" not in record.read_text()

    for source in (record, record.parent):  # the file, or the run directory that holds it
        replayer = make_client(f"replay:{source}", config)
        first, second = asyncio.run(complete_all(replayer, [Request(MESSAGES, n=2), Request(MESSAGES, n=1)]))
        assert [c.text for c in first.completions] == ["first", "second"]
        assert [(c.text, c.finish_reason) for c in second.completions] == [("third", "length")]
        assert replayer.budget.spent_usd == 0
    assert len(server.seen) == 2, "replay sends nothing"


def test_replay_reads_plain_answers_and_says_when_they_run_short(tmp_path: Path) -> None:
    recording = tmp_path / "answers.jsonl"
    recording.write_text('"just one answer"\n{"text": "and a second", "finish_reason": "length"}\n')
    client = make_client(f"replay:{recording}", load_llm_config())
    [response] = asyncio.run(complete_all(client, [Request(MESSAGES, n=3)]))
    assert [(c.text, c.finish_reason) for c in response.completions] == [
        ("just one answer", "stop"),
        ("and a second", "length"),
    ]
    assert response.errors == [
        f"replay:{recording}: all 2 recorded completions of {recording} have been served"
    ]


def test_replay_of_an_exhausted_recording_raises(tmp_path: Path) -> None:
    recording = tmp_path / "answers.jsonl"
    recording.write_text('"only"\n')
    client = make_client(f"replay:{recording}", load_llm_config())
    with pytest.raises(LLMError, match="all 1 recorded completions"):
        asyncio.run(complete_all(client, [Request(MESSAGES), Request(MESSAGES)]))


def test_settings_file_endpoints_and_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek")
    path = tmp_path / "cudasmith.toml"
    path.write_text(
        '[llm]\nmodel = "deepseek:deepseek-chat"\nbudget_usd = 2.5\n'
        '[llm.endpoints.deepseek]\nbase_url = "http://127.0.0.1:9/v1"\napi_key_env = "DEEPSEEK_API_KEY"\n'
    )
    config = load_llm_config(path)
    assert config.budget_usd == 2.5
    provider = make_provider(config.default_model(), config)
    assert provider.spec == "deepseek:deepseek-chat"
    assert type(provider).__name__ == "OpenAIProvider"

    path.write_text("[llm]\nbudget_usd = -1\n")
    with pytest.raises(UsageError, match=r"llm.budget_usd: Input should be greater than 0"):
        load_llm_config(path)
    path.write_text("[llm]\nmax_retry = 3\n")
    with pytest.raises(UsageError, match=r"llm.max_retry: Extra inputs are not permitted"):
        load_llm_config(path)
    with pytest.raises(UsageError, match="config file not found"):
        load_llm_config(tmp_path / "missing.toml")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("gpt-5", "must be PROVIDER:MODEL"),
        ("bard:gemini", "unknown model provider 'bard'"),
        ("replay:nope.jsonl", "no recorded responses"),
    ],
)
def test_bad_model_specs_are_usage_errors(spec: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        make_provider(spec, load_llm_config())


def test_the_default_model_is_local() -> None:
    assert load_llm_config().default_model().startswith("hf:")
