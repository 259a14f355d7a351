"""The local Hugging Face provider on a tiny GPT-2 with random weights, made here, offline."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from cudasmith.errors import LLMError
from cudasmith.llm import LLMClient, Message, Request, load_llm_config, make_client

pytest.importorskip("transformers", reason="local hf: models need transformers (pip install -e '.[hf]')")

MESSAGES = (Message("system", "You write kernels."), Message("user", "Write a softmax kernel."))
# Long enough that generating it all takes far longer than the timeout test waits.
LONG_CONTEXT = 100_000


def tiny_model(directory: Path, context: int, stops: bool = True) -> Path:
    """A one-layer GPT-2 and a byte-level BPE tokenizer (with a chat template), saved to `directory`.

    `stops=False`: the model has no end-of-sequence token, so it generates until a limit stops it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<unk>", "<eos>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(
        ["__global__ void softmax(float* x)", "class ModelNew(nn.Module):"], trainer
    )
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<eos>", unk_token="<unk>")
    fast.chat_template = (
        "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    fast.save_pretrained(directory)
    config = GPT2Config(
        vocab_size=len(fast),
        n_positions=context,
        n_embd=16,
        n_layer=1,
        n_head=2,
        eos_token_id=fast.eos_token_id if stops else None,
        bos_token_id=fast.eos_token_id if stops else None,
    )
    GPT2LMHeadModel(config).save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model(tmp_path_factory.mktemp("tiny-gpt2"), context=512)


def run(client: LLMClient, request: Request) -> Any:
    async def go() -> Any:
        async with client:
            return await client.complete(request)

    return asyncio.run(go())


def test_generates_n_completions_with_token_counts(model_dir: Path) -> None:
    from transformers import AutoTokenizer

    client = make_client(f"hf:{model_dir}", load_llm_config(hf={"device": "cpu"}))
    response = run(client, Request(MESSAGES, n=3, max_tokens=12, temperature=1.0))
    assert len(response.completions) == 3
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    prompt = tokenizer.apply_chat_template(
        [{"role": m.role, "content": m.content} for m in MESSAGES], add_generation_prompt=True
    )
    prompt_ids = prompt["input_ids"] if hasattr(prompt, "keys") else prompt
    assert sum(c.input_tokens for c in response.completions) == len(prompt_ids)
    for completion in response.completions:
        assert isinstance(completion.text, str)
        assert 1 <= completion.output_tokens <= 12
        assert completion.finish_reason == ("length" if completion.output_tokens == 12 else "stop")
        assert completion.cost_usd == 0.0


def test_greedy_decoding_gives_the_same_answer_n_times(model_dir: Path) -> None:
    client = make_client(f"hf:{model_dir}", load_llm_config(hf={"device": "cpu"}))
    response = run(client, Request(MESSAGES, n=2, max_tokens=8, temperature=0.0))
    first, second = response.completions
    assert first.text == second.text
    assert second.output_tokens == 0, "a copy costs no tokens"


def test_a_timeout_really_stops_generation(tmp_path: Path) -> None:
    directory = tiny_model(tmp_path, context=LONG_CONTEXT, stops=False)
    config = load_llm_config(hf={"device": "cpu"}, timeout_s=1.0, max_retries=0)
    client = make_client(f"hf:{directory}", config)
    with pytest.raises(LLMError, match="no answer within 1 s"):
        run(client, Request(MESSAGES, n=1, max_tokens=LONG_CONTEXT - 100, temperature=1.0))
    provider = client.provider
    deadline = time.monotonic() + 60  # a guard, not a speed claim: the loop ends when the thread does
    # The generating thread must end (it releases its lock) instead of running on to 100k tokens.
    while provider._generating.locked() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not provider._generating.locked()
