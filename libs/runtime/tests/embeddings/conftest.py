"""Shared fixtures: one MiniLM model per session, an in-process embeddings server, no-wait sleep."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from mnemo_runtime.embeddings import FakeEmbedder, MiniLMEmbedder, OnnxMiniLMEmbedder

SERVED_DIMENSION = 48


class EmbeddingsServer:
    """An OpenAI-shaped /embeddings endpoint behind httpx.MockTransport.

    Vectors come from a FakeEmbedder, scaled and returned out of order, so clients must both
    normalise and honour "index". Queue responses in ``failures`` to script errors first.
    """

    def __init__(self, dimension: int = SERVED_DIMENSION) -> None:
        self.model = FakeEmbedder(dimension)
        self.requests: list[httpx.Request] = []
        self.failures: list[httpx.Response | Exception] = []
        self.transport = httpx.MockTransport(self._handle)

    def payloads(self) -> list[dict[str, object]]:
        return [json.loads(r.content) for r in self.requests]

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.failures:
            failure = self.failures.pop(0)
            if isinstance(failure, Exception):
                raise failure
            return failure
        body = json.loads(request.content)
        vectors = self.model.embed_sync(body["input"]) * 3.0
        data = [
            {"object": "embedding", "index": i, "embedding": [float(x) for x in vector]}
            for i, vector in enumerate(vectors)
        ]
        return httpx.Response(
            200,
            json={"object": "list", "model": body["model"], "data": data[::-1]},
        )


@pytest.fixture
def server() -> Iterator[EmbeddingsServer]:
    yield EmbeddingsServer()


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    # A batch size smaller than most test inputs, so the multi-batch path is always exercised.
    return MiniLMEmbedder(batch_size=4)


@pytest.fixture(scope="session")
def onnx_minilm() -> OnnxMiniLMEmbedder:
    # Small batches on two workers: the multi-batch and threaded paths are always exercised.
    return OnnxMiniLMEmbedder(batch_size=4, workers=2)


class SleepRecorder:
    """Stands in for asyncio.sleep so retry tests run instantly and can read the delays."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()
