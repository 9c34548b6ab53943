"""build_embedder: one entry point for composition roots."""

from __future__ import annotations

import httpx
import numpy as np
import pytest

from mnemo_runtime.embeddings import (
    EMBEDDER_KINDS,
    FakeEmbedder,
    MiniLMEmbedder,
    OnnxMiniLMEmbedder,
    OpenAICompatEmbedder,
    build_embedder,
)


def test_kinds() -> None:
    assert set(EMBEDDER_KINDS) == {"minilm", "minilm-numpy", "openai", "fake"}


def test_builds_a_fake() -> None:
    embedder = build_embedder("fake", dimension=32)
    assert isinstance(embedder, FakeEmbedder)
    assert embedder.dimension == 32


def test_minilm_is_the_onnxruntime_one() -> None:
    assert isinstance(build_embedder("minilm", batch_size=8, workers=2), OnnxMiniLMEmbedder)


def test_builds_the_numpy_minilm() -> None:
    assert isinstance(build_embedder("minilm-numpy", batch_size=8, workers=2), MiniLMEmbedder)


async def test_builds_an_openai_compatible_client() -> None:
    embedder = build_embedder(
        "openai",
        base_url="http://embeddings.test/v1",
        model="text-embedding-3-small",
        dimension=1536,
        transport=httpx.MockTransport(lambda _: httpx.Response(500)),
    )
    assert isinstance(embedder, OpenAICompatEmbedder)
    assert (embedder.model_name, embedder.dimension) == ("text-embedding-3-small", 1536)
    await embedder.aclose()


def test_openai_needs_url_model_and_dimension() -> None:
    with pytest.raises(ValueError, match="base_url, model and dimension"):
        build_embedder("openai", model="m", dimension=8)


def test_refuses_options_the_kind_would_ignore() -> None:
    with pytest.raises(ValueError, match="base_url"):
        build_embedder("minilm", base_url="http://embeddings.test")
    with pytest.raises(ValueError, match="batch_size"):
        build_embedder("fake", batch_size=4)
    with pytest.raises(ValueError, match="workers"):
        build_embedder("fake", workers=2)
    with pytest.raises(ValueError, match="query_int8"):
        build_embedder("minilm-numpy", query_int8=True)


def test_refuses_unknown_kinds() -> None:
    with pytest.raises(ValueError, match="unknown embedder kind 'word2vec'"):
        build_embedder("word2vec")


async def test_minilm_query_precision_is_a_choice() -> None:
    text = "What is Bob excited about?"
    exact = build_embedder("minilm", query_int8=False)
    quantized = build_embedder("minilm", query_int8=True)
    row = (await exact.embed([text]))[0]
    assert np.array_equal(await exact.embed_query(text), row)
    assert not np.array_equal(await quantized.embed_query(text), row)
