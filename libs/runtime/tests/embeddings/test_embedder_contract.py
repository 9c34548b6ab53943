"""The Embedder contract, run against every implementation so that none can drift."""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np
import pytest

from mnemo_runtime.embeddings import Embedder, FakeEmbedder, OpenAICompatEmbedder

TEXTS = [
    "Alice prefers her coffee black.",
    "Bob is moving to Lisbon in the spring.",
    "Remind me to renew the car insurance before March.",
    "Zoë ordered crème brûlée at the café 🍰",
    "",
    "ok",
    "The quarterly review moved to Thursday afternoon because the client cancelled.",
]


@pytest.fixture(params=["fake", "minilm", "onnx-minilm", "openai"])
async def embedder(request: pytest.FixtureRequest, server) -> AsyncIterator[Embedder]:
    if request.param == "fake":
        yield FakeEmbedder()
    elif request.param == "minilm":
        yield request.getfixturevalue("minilm")
    elif request.param == "onnx-minilm":
        yield request.getfixturevalue("onnx_minilm")
    else:
        client = OpenAICompatEmbedder(
            base_url="http://embeddings.test/v1",
            model="served-fake",
            dimension=server.model.dimension,
            batch_size=3,
            transport=server.transport,
        )
        yield client
        await client.aclose()


def test_names_its_model_and_dimension(embedder: Embedder) -> None:
    assert isinstance(embedder.model_name, str)
    assert embedder.model_name
    assert isinstance(embedder.dimension, int)
    assert embedder.dimension > 0


async def test_returns_one_float32_row_per_text(embedder: Embedder) -> None:
    vectors = await embedder.embed(TEXTS)
    assert isinstance(vectors, np.ndarray)
    assert vectors.dtype == np.float32
    assert vectors.shape == (len(TEXTS), embedder.dimension)
    assert np.isfinite(vectors).all()


async def test_rows_have_unit_length(embedder: Embedder) -> None:
    vectors = await embedder.embed(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


async def test_is_deterministic(embedder: Embedder) -> None:
    first = await embedder.embed(TEXTS)
    second = await embedder.embed(TEXTS)
    np.testing.assert_allclose(first, second, atol=1e-6)


async def test_batching_does_not_change_vectors(embedder: Embedder) -> None:
    together = await embedder.embed(TEXTS)
    one_by_one = np.concatenate([await embedder.embed([text]) for text in TEXTS])
    np.testing.assert_allclose(together, one_by_one, atol=1e-5)


async def test_preserves_input_order(embedder: Embedder) -> None:
    forward = await embedder.embed(TEXTS)
    backward = await embedder.embed(TEXTS[::-1])
    np.testing.assert_allclose(forward, backward[::-1], atol=1e-5)


async def test_accepts_a_tuple(embedder: Embedder) -> None:
    vectors = await embedder.embed(tuple(TEXTS[:2]))
    assert vectors.shape == (2, embedder.dimension)


async def test_empty_input_gives_an_empty_array(embedder: Embedder) -> None:
    vectors = await embedder.embed([])
    assert vectors.shape == (0, embedder.dimension)
    assert vectors.dtype == np.float32


async def test_similar_texts_are_closer_than_unrelated_ones(embedder: Embedder) -> None:
    anchor, similar, unrelated = await embedder.embed(
        [
            "The cat sat on the mat in the kitchen.",
            "A cat was sitting on the kitchen mat.",
            "Quarterly tax filings are due at the end of April.",
        ]
    )
    assert float(anchor @ similar) > float(anchor @ unrelated) + 0.1


async def test_a_query_vector_is_close_to_the_texts_own(embedder: Embedder) -> None:
    rows = await embedder.embed(TEXTS)
    for text, row in zip(TEXTS, rows, strict=True):
        query = await embedder.embed_query(text)
        assert query.dtype == np.float32
        assert query.shape == (embedder.dimension,)
        assert abs(float(np.linalg.norm(query)) - 1.0) < 1e-5
        assert float(query @ row) >= 0.97, text
