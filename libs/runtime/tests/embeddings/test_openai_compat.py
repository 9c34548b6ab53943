"""The OpenAI-compatible adapter's wire format, retries and validation, over a mock transport."""

from __future__ import annotations

import httpx
import numpy as np
import pytest
from pydantic import SecretStr

from mnemo_runtime.embeddings import EmbeddingError, OpenAICompatEmbedder


def make(server, sleeps, **options) -> OpenAICompatEmbedder:
    settings = {
        "base_url": "http://embeddings.test/v1/",
        "model": "served-fake",
        "dimension": server.model.dimension,
        "transport": server.transport,
        "sleep": sleeps,
        "backoff_s": 0.5,
    }
    return OpenAICompatEmbedder(**(settings | options))


async def test_posts_model_and_input_to_the_embeddings_path(server, sleeps) -> None:
    await make(server, sleeps).embed(["hello", "world"])
    (request,) = server.requests
    assert request.method == "POST"
    assert str(request.url) == "http://embeddings.test/v1/embeddings"
    assert server.payloads() == [{"model": "served-fake", "input": ["hello", "world"]}]
    assert "authorization" not in request.headers


async def test_sends_the_api_key_as_a_bearer_token(server, sleeps) -> None:
    embedder = make(server, sleeps, api_key=SecretStr("sk-test"))
    await embedder.embed(["hello"])
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"
    assert "sk-test" not in repr(vars(embedder))


async def test_can_ask_the_server_for_the_declared_dimension(server, sleeps) -> None:
    await make(server, sleeps, send_dimensions=True).embed(["hello"])
    assert server.payloads()[0]["dimensions"] == server.model.dimension


async def test_splits_input_into_batches(server, sleeps) -> None:
    texts = [f"text number {i}" for i in range(7)]
    vectors = await make(server, sleeps, batch_size=3).embed(texts)
    assert [p["input"] for p in server.payloads()] == [texts[0:3], texts[3:6], texts[6:7]]
    np.testing.assert_allclose(vectors, server.model.embed_sync(texts), atol=1e-6)


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
async def test_retries_throttling_and_server_errors(server, sleeps, status: int) -> None:
    server.failures = [httpx.Response(status), httpx.Response(status)]
    vectors = await make(server, sleeps).embed(["hello"])
    assert vectors.shape == (1, server.model.dimension)
    assert len(server.requests) == 3
    assert len(sleeps.delays) == 2
    assert 0.0 <= sleeps.delays[0] <= 0.5
    assert 0.0 <= sleeps.delays[1] <= 1.0


async def test_retries_transport_errors(server, sleeps) -> None:
    server.failures = [httpx.ConnectError("refused"), httpx.ReadTimeout("slow")]
    vectors = await make(server, sleeps).embed(["hello"])
    assert vectors.shape == (1, server.model.dimension)
    assert len(server.requests) == 3


async def test_waits_as_long_as_retry_after_asks(server, sleeps) -> None:
    server.failures = [httpx.Response(429, headers={"Retry-After": "7"})]
    await make(server, sleeps).embed(["hello"])
    assert sleeps.delays == [7.0]


async def test_gives_up_after_max_retries(server, sleeps) -> None:
    server.failures = [httpx.Response(503, text="overloaded")] * 3
    with pytest.raises(EmbeddingError, match="503"):
        await make(server, sleeps, max_retries=2).embed(["hello"])
    assert len(server.requests) == 3


async def test_does_not_retry_client_errors(server, sleeps) -> None:
    server.failures = [httpx.Response(400, json={"error": "bad model"})]
    with pytest.raises(EmbeddingError, match="400"):
        await make(server, sleeps).embed(["hello"])
    assert len(server.requests) == 1
    assert sleeps.delays == []


async def test_rejects_vectors_of_another_dimension(server, sleeps) -> None:
    embedder = make(server, sleeps, dimension=server.model.dimension + 1)
    with pytest.raises(EmbeddingError, match="expected 1 vectors"):
        await embedder.embed(["hello"])


async def test_rejects_a_malformed_body(server, sleeps) -> None:
    server.failures = [httpx.Response(200, json={"unexpected": True})]
    with pytest.raises(EmbeddingError, match="malformed"):
        await make(server, sleeps).embed(["hello"])


async def test_closes_its_client_as_a_context_manager(server, sleeps) -> None:
    async with make(server, sleeps) as embedder:
        await embedder.embed(["hello"])
    with pytest.raises(RuntimeError):
        await embedder.embed(["hello"])
