"""A Hugging Face causal language model run in this process with transformers (`hf:<model>`).

The default when nothing else is configured: no key, no server. The weights come from the Hugging Face
cache or a local directory; without them (offline, say) a one-line UsageError says how to get them.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any, TypedDict

from cudasmith.errors import LLMError, UsageError
from cudasmith.llm.base import Completion, Message, Provider, ProviderError, Request, one_line, split_usage
from cudasmith.llm.config import LocalModel

# Sequences generated in one batch; more completions take several calls.
MAX_N_PER_CALL = 8


def transformers_missing(spec: str) -> UsageError:
    """The error for an `hf:` model where transformers is not installed."""
    return UsageError(f"{spec} needs transformers: pip install 'cudasmith[hf]'")


def _prompt_text(messages: tuple[Message, ...]) -> str:
    """A plain transcript for tokenizers without a chat template."""
    turns = [f"{m.role.capitalize()}: {m.content}" for m in messages]
    return "\n\n".join(turns) + "\n\nAssistant:"


class GenerateOptions(TypedDict, total=False):
    """What `generate` is told besides the prompt's tokens."""

    max_new_tokens: int
    do_sample: bool
    num_return_sequences: int
    pad_token_id: int
    # transformers' StoppingCriteriaList (imported with transformers, on first use).
    stopping_criteria: Any
    temperature: float


class HFProvider(Provider):
    """`hf:<model id or directory>`: generation on the local GPU (or the CPU when there is none)."""

    max_n_per_call = MAX_N_PER_CALL

    def __init__(self, spec: str, model: str, settings: LocalModel) -> None:
        self.spec = spec
        self.model_name = model
        self.settings = settings
        try:
            import transformers  # noqa: F401
        except ImportError:
            raise transformers_missing(spec) from None
        self._model: Any = None
        self._tokenizer: Any = None
        self._device = "cpu"
        # One generation at a time: a cancelled one finishes its current token before the next starts.
        self._generating = threading.Lock()

    async def start(self) -> None:
        await asyncio.to_thread(self._load)

    def _load(self) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self._device = self.settings.device or ("cuda" if torch.cuda.is_available() else "cpu")
        local = Path(self.model_name).is_dir()
        try:
            self._tokenizer = AutoTokenizer.from_pretrained(self.model_name, local_files_only=local)
            self._model = AutoModelForCausalLM.from_pretrained(
                self.model_name, local_files_only=local, dtype=self.settings.dtype
            )
        except OSError as exc:
            raise UsageError(self._missing_weights(exc)) from None
        except Exception as exc:
            raise LLMError(
                f"{self.spec}: loading the model failed: {type(exc).__name__}: {one_line(str(exc))}"
            ) from None
        self._model.to(self._device).eval()

    def _missing_weights(self, exc: OSError) -> str:
        offline = " (HF_HUB_OFFLINE is set)" if os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0") else ""
        return (
            f"{self.spec}: no weights here{offline}: fetch them where there is network with "
            f"`hf download {self.model_name}`, or use a hosted model: --model openai:<name> with "
            f"OPENAI_API_KEY set, or anthropic:<name> with ANTHROPIC_API_KEY ({type(exc).__name__})"
        )

    async def sample(self, request: Request) -> list[Completion]:
        stop = threading.Event()
        future = asyncio.get_running_loop().run_in_executor(None, self._generate, request, stop)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            # A timeout: the thread sees the flag at its next token and ends the generation.
            stop.set()
            raise

    def _encode(self, request: Request) -> Any:
        if getattr(self._tokenizer, "chat_template", None):
            chat = [{"role": m.role, "content": m.content} for m in request.messages]
            return self._tokenizer.apply_chat_template(
                chat, add_generation_prompt=True, return_tensors="pt", return_dict=True
            )
        return self._tokenizer(_prompt_text(request.messages), return_tensors="pt")

    def _generate(self, request: Request, stop: threading.Event) -> list[Completion]:
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList

        class Cancelled(StoppingCriteria):
            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                return torch.full(
                    (input_ids.shape[0],), stop.is_set(), dtype=torch.bool, device=input_ids.device
                )

        with self._generating:
            encoded = {k: v.to(self._device) for k, v in self._encode(request).items()}
            prompt_tokens = int(encoded["input_ids"].shape[1])
            context = getattr(self._model.config, "max_position_embeddings", None)
            new_tokens = (
                request.max_tokens if context is None else min(request.max_tokens, context - prompt_tokens)
            )
            if new_tokens <= 0:
                raise ProviderError(
                    f"{self.spec}: the prompt has {prompt_tokens} tokens, the model's context {context}",
                    False,
                )
            greedy = request.temperature == 0
            eos = self._model.generation_config.eos_token_id
            eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
            pad = (
                self._tokenizer.pad_token_id
                if self._tokenizer.pad_token_id is not None
                else next(iter(eos_ids), 0)
            )
            options: GenerateOptions = {
                "max_new_tokens": new_tokens,
                "do_sample": not greedy,
                # Greedy decoding gives one answer however often it is asked; it is generated once.
                "num_return_sequences": 1 if greedy else request.n,
                "pad_token_id": pad,
                "stopping_criteria": StoppingCriteriaList([Cancelled()]),
            }
            if request.temperature:
                options["temperature"] = request.temperature
            with torch.inference_mode():
                output = self._model.generate(**encoded, **options)
        if stop.is_set():
            raise ProviderError(f"{self.spec}: generation cancelled", True)
        texts, lengths, reasons = [], [], []
        for row in output.tolist():
            generated = row[prompt_tokens:]
            end = next((i for i, token in enumerate(generated) if token in eos_ids), None)
            lengths.append(len(generated) if end is None else end + 1)
            reasons.append("length" if end is None else "stop")
            texts.append(self._tokenizer.decode(generated[: lengths[-1]], skip_special_tokens=True))
        if greedy:  # copies of the one answer; its tokens are counted once
            texts, reasons = texts * request.n, reasons * request.n
            lengths = lengths + [0] * (request.n - 1)
        inputs = split_usage(prompt_tokens, [1] * len(texts))
        return [
            Completion(
                text=text,
                finish_reason=reason,
                model=self.model_name,
                input_tokens=input_tokens,
                output_tokens=length,
                cost_usd=0.0,
            )
            for text, reason, input_tokens, length in zip(texts, reasons, inputs, lengths, strict=True)
        ]

    async def close(self) -> None:
        self._model = None
        self._tokenizer = None
