"""Retries, tracing and accounting around one provider call, shared by every provider.

Providers turn their SDK's failures into ``Transient`` (worth retrying) or ``ModelRejected``;
this module owns what happens next, so both providers back off, trace and account identically.
Sleep, jitter and clock are injected so tests observe backoff without waiting.
"""

from __future__ import annotations

import asyncio
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from opentelemetry import trace

from mnemo_runtime.logging import get_logger
from mnemo_runtime.models.ports import ModelRequest, ModelResponse, ModelUnavailable
from mnemo_runtime.models.usage import UsageLedger
from mnemo_runtime.tracing import tracer as component_tracer

Sleep = Callable[[float], Awaitable[None]]

log = get_logger(__name__)


class Transient(Exception):
    """A failure worth retrying: rate limit, overload, 5xx, timeout, dropped connection."""

    def __init__(self, reason: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter; ``max_attempts`` counts the first try."""

    max_attempts: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    # A server asking for a longer pause than this is treated as an outage, not a hint.
    max_retry_after_s: float = 60.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")

    def delay(self, retry: int, jitter: float, retry_after_s: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (from 1); ``jitter`` is in [0, 1)."""
        step = min(self.max_delay_s, self.base_delay_s * 2.0 ** (retry - 1))
        # Equal jitter: never less than half the step (so a burst of clients stays spread out
        # after a shared 429) and never more than the step.
        backoff = step / 2 + jitter * step / 2
        if retry_after_s is None:
            return backoff
        return max(backoff, min(retry_after_s, self.max_retry_after_s))


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """The wait the server asked for (``retry-after-ms`` or ``retry-after`` seconds), if any."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value: str | None = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            continue  # an HTTP-date: rare enough to fall back on our own backoff
    return None


@dataclass
class CallRuntime:
    """Retry policy, usage ledger, tracer and clocks for the calls of one or more providers."""

    retry: RetryPolicy = field(default_factory=RetryPolicy)
    ledger: UsageLedger = field(default_factory=UsageLedger)
    tracer: trace.Tracer | None = None
    sleep: Sleep = asyncio.sleep
    jitter: Callable[[], float] = random.random
    clock: Callable[[], float] = time.perf_counter

    async def call(
        self,
        *,
        provider: str,
        model: str,
        request: ModelRequest,
        attempt: Callable[[], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        """Run ``attempt`` with retries inside a span, and account it against the stage."""
        tracer = self.tracer or component_tracer("mnemo.models")
        attributes: dict[str, str | int] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": provider,
            "gen_ai.request.model": model,
            "gen_ai.request.max_tokens": request.max_tokens,
            "mnemo.stage": request.stage.value,
        }
        started = self.clock()
        retries = 0
        with tracer.start_as_current_span(
            f"chat {model}", kind=trace.SpanKind.CLIENT, attributes=attributes
        ) as span:
            try:
                while True:
                    try:
                        response = await attempt()
                        break
                    except Transient as exc:
                        if retries + 1 >= self.retry.max_attempts:
                            raise ModelUnavailable(exc.reason, attempts=retries + 1) from exc
                        retries += 1
                        await self._back_off(request, retries, exc)
            except Exception:
                elapsed = (self.clock() - started) * 1000
                self.ledger.record_failure(request.stage, latency_ms=elapsed, retries=retries)
                span.set_attribute("mnemo.model.retries", retries)
                raise
            latency_ms = (self.clock() - started) * 1000
            span.set_attribute("gen_ai.response.model", response.model)
            span.set_attribute("gen_ai.response.finish_reasons", [response.stop_reason])
            span.set_attribute("gen_ai.usage.input_tokens", response.usage.input_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", response.usage.output_tokens)
            span.set_attribute("mnemo.model.retries", retries)
            span.set_attribute("mnemo.model.latency_ms", latency_ms)
        self.ledger.record(request.stage, response.usage, latency_ms=latency_ms, retries=retries)
        return response.model_copy(update={"latency_ms": latency_ms})

    async def _back_off(self, request: ModelRequest, retry: int, exc: Transient) -> None:
        wait = self.retry.delay(retry, self.jitter(), exc.retry_after_s)
        log.warning(
            "model.retry",
            stage=request.stage.value,
            retry=retry,
            reason=exc.reason,
            wait_s=round(wait, 3),
        )
        await self.sleep(wait)


class ProviderModel(ABC):
    """A ``ChatModel`` whose every turn is one attempt, retried, traced and accounted by a
    ``CallRuntime``; providers implement the attempt."""

    provider: ClassVar[str]

    def __init__(self, model: str, calls: CallRuntime | None = None) -> None:
        self.model = model
        self._calls = calls or CallRuntime()

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The model's turn, retried on transient failures and accounted by stage."""
        return await self._calls.call(
            provider=self.provider,
            model=self.model,
            request=request,
            attempt=lambda: self._once(request),
        )

    @abstractmethod
    async def _once(self, request: ModelRequest) -> ModelResponse:
        """One attempt; raises ``Transient`` for what is worth retrying."""
