"""What every provider gets once: retries with backoff, a timeout that cancels, a concurrency limit,
a cost budget, and a record of every answer (which `replay:` serves back).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType

from cudasmith.errors import BudgetExhausted, LLMError
from cudasmith.llm.base import Completion, Provider, ProviderError, Request
from cudasmith.llm.config import LLMConfig, Price
from cudasmith.store.records import Usage
from cudasmith.timestamps import now_iso

log = logging.getLogger("cudasmith.llm")

# Backoff delays are scaled by a random factor in [JITTER, 1] so that parallel callers spread out.
JITTER = 0.5


class Budget:
    """Money spent so far against an optional limit; one budget may be shared by several clients."""

    def __init__(self, limit_usd: float | None = None) -> None:
        self.limit_usd = limit_usd
        self.spent_usd = 0.0

    def check(self) -> None:
        """Raise BudgetExhausted once the limit is reached (calls already in flight still finish)."""
        if self.limit_usd is not None and self.spent_usd >= self.limit_usd:
            raise BudgetExhausted(
                f"the budget of ${self.limit_usd:.2f} is spent (${self.spent_usd:.4f}); no further requests"
            )

    def add(self, cost_usd: float) -> None:
        """Count money spent."""
        self.spent_usd += cost_usd


def price_of(completion: Completion, price: Price | None) -> float | None:
    """The completion's cost: as the server reported it, else from configured prices and its tokens."""
    if completion.cost_usd is not None:
        return completion.cost_usd
    if price is None or completion.input_tokens is None or completion.output_tokens is None:
        return None
    return (completion.input_tokens * price.input + completion.output_tokens * price.output) / 1e6


@dataclass
class Response:
    """The completions of one request, and why any call behind it failed."""

    completions: list[Completion]
    errors: list[str] = field(default_factory=list)


class LLMClient:
    """A provider with the run's policies around it. Use `async with` or call `close()`."""

    def __init__(
        self,
        provider: Provider,
        config: LLMConfig,
        budget: Budget | None = None,
        record_path: Path | None = None,
    ) -> None:
        self.provider = provider
        self.config = config
        self.budget = budget or Budget(config.budget_usd)
        self.record_path = record_path
        self.usage = Usage()
        self._slots = asyncio.Semaphore(config.max_concurrency)
        self._start_lock = asyncio.Lock()
        self._started = False
        self._warned_unpriced = False
        self._price = config.prices.get(provider.spec) or config.prices.get(provider.spec.split(":", 1)[-1])

    @property
    def spec(self) -> str:
        """The model spec, e.g. 'openai:gpt-5-mini'."""
        return self.provider.spec

    async def complete(self, request: Request) -> Response:
        """Up to `request.n` completions. Calls that failed for good are listed in the response's
        errors; when every call failed, the first failure is raised (BudgetExhausted once it is spent)."""
        async with self._start_lock:
            if not self._started:
                await self.provider.start()
                self._started = True
        per_call = max(1, self.provider.max_n_per_call)
        sizes = [min(per_call, request.n - k) for k in range(0, request.n, per_call)]
        completions, failures = await self._gather(request, sizes)
        missing = request.n - len(completions)
        if missing > 0 and not failures and completions:
            # The server answered with fewer choices than asked (some ignore n): ask one at a time.
            more, failures = await self._gather(request, [1] * missing)
            completions += more
        response = Response(completions[: request.n], [str(f) for f in failures])
        self._record(request, response)
        if not completions and failures:
            raise failures[0]
        return response

    async def _gather(self, request: Request, sizes: list[int]) -> tuple[list[Completion], list[LLMError]]:
        results = await asyncio.gather(
            *(self._call(request.with_n(size)) for size in sizes), return_exceptions=True
        )
        completions: list[Completion] = []
        failures: list[LLMError] = []
        for result in results:
            if isinstance(result, LLMError):
                failures.append(result)
            elif isinstance(result, BaseException):
                raise result
            else:
                completions += result
        return completions, failures

    async def _call(self, request: Request) -> list[Completion]:
        """One provider call under the concurrency limit, retried while retrying may help."""
        attempts = self.config.max_retries + 1
        for attempt in range(1, attempts + 1):
            self.budget.check()
            async with self._slots:
                self.budget.check()
                started = time.monotonic()
                try:
                    completions = await asyncio.wait_for(
                        self.provider.sample(request), timeout=self.config.timeout_s
                    )
                except asyncio.TimeoutError:
                    error = ProviderError(
                        f"no answer within {self.config.timeout_s:g} s (request cancelled)", retryable=True
                    )
                except ProviderError as exc:
                    error = exc
                else:
                    return self._account(completions, time.monotonic() - started)
                finally:
                    self.usage.calls += 1
            if not error.retryable or attempt == attempts:
                tried = f" after {attempt} attempts" if attempt > 1 else ""
                raise LLMError(f"{self.spec}: {error}{tried}")
            delay = self._backoff(attempt, error.retry_after_s)
            log.warning(
                "%s: %s; retrying in %.1f s (attempt %d of %d)", self.spec, error, delay, attempt, attempts
            )
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    def _backoff(self, attempt: int, retry_after_s: float | None) -> float:
        cap = self.config.backoff_max_s
        if retry_after_s is not None:
            return min(retry_after_s, cap)
        delay = min(cap, self.config.backoff_initial_s * 2 ** (attempt - 1))
        return delay * random.uniform(JITTER, 1.0)

    def _account(self, completions: list[Completion], latency_s: float) -> list[Completion]:
        for completion in completions:
            completion.latency_s = round(latency_s, 3)
            completion.cost_usd = price_of(completion, self._price)
            if (
                completion.cost_usd is None
                and self.budget.limit_usd is not None
                and not self._warned_unpriced
            ):
                self._warned_unpriced = True
                log.warning(
                    "%s: no price reported or configured ([llm.prices] in cudasmith.toml): "
                    "the budget cannot count its answers",
                    self.spec,
                )
            if completion.cost_usd is not None and math.isfinite(completion.cost_usd):
                self.budget.add(completion.cost_usd)
            self.usage.add(completion)
        return completions

    def _record(self, request: Request, response: Response) -> None:
        if self.record_path is None:
            return
        entry = {
            "time": now_iso(),
            "model": self.spec,
            "request": asdict(request),
            "completions": [c.to_dict() for c in response.completions],
            "errors": response.errors,
        }
        self.record_path.parent.mkdir(parents=True, exist_ok=True)
        with self.record_path.open("a") as file:
            file.write(json.dumps(entry) + "\n")

    async def close(self) -> None:
        """Close the provider's connections."""
        await self.provider.close()

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
