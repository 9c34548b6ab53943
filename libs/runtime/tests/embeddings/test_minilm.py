"""The local all-MiniLM-L6-v2 embedders against vectors from the reference sentence-transformers stack.

Reference checks run on both the numpy and the onnxruntime implementation; the numpy one's
own options are checked here, the onnxruntime one's in test_onnx_minilm.py.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

from mnemo_runtime.embeddings import MiniLMEmbedder, OnnxMiniLMEmbedder
from mnemo_runtime.embeddings.minilm import MODEL_NAME

REFERENCE = json.loads(
    (Path(__file__).parent / "data" / "minilm_reference.json").read_text(encoding="utf-8")
)


LocalMiniLM = MiniLMEmbedder | OnnxMiniLMEmbedder


@pytest.fixture(params=["numpy", "onnx"])
def local(request: pytest.FixtureRequest) -> LocalMiniLM:
    return request.getfixturevalue("minilm" if request.param == "numpy" else "onnx_minilm")


def test_reference_fixture_covers_truncation_and_unicode() -> None:
    texts = [case["text"] for case in REFERENCE["cases"]]
    assert max(REFERENCE["token_counts_untruncated"]) > REFERENCE["max_seq_length"]
    assert any(not text.isascii() for text in texts)
    assert REFERENCE["model"] == MODEL_NAME


@pytest.mark.parametrize("case", REFERENCE["cases"], ids=lambda case: case["text"][:24] or "empty")
async def test_matches_sentence_transformers(local: LocalMiniLM, case: dict) -> None:
    (vector,) = await local.embed([case["text"]])
    expected = np.asarray(case["vector"], dtype=np.float32)
    cosine = float(vector @ expected / np.linalg.norm(expected))
    assert cosine >= 0.999


async def test_matches_sentence_transformers_in_one_batch(local: LocalMiniLM) -> None:
    texts = [case["text"] for case in REFERENCE["cases"]]
    expected = np.asarray([case["vector"] for case in REFERENCE["cases"]], dtype=np.float32)
    vectors = await local.embed(texts)
    np.testing.assert_allclose(vectors, expected, atol=5e-5)


def test_text_past_the_token_limit_is_truncated(local: LocalMiniLM) -> None:
    long_text = max((case["text"] for case in REFERENCE["cases"]), key=len)
    base, extended = local.embed_sync([long_text, long_text + " and a different ending."])
    np.testing.assert_allclose(base, extended, atol=1e-6)


def test_dimension_and_name(local: LocalMiniLM) -> None:
    assert local.dimension == 384
    assert local.model_name == "sentence-transformers/all-MiniLM-L6-v2"


async def test_embed_leaves_the_event_loop_free(local: LocalMiniLM) -> None:
    ticks = 0
    task = asyncio.create_task(local.embed(["a sentence about memory"] * 64))
    while not task.done():
        ticks += 1
        await asyncio.sleep(0)
    await task
    assert ticks > 1


@pytest.mark.parametrize(("batch_size", "workers"), [(1, 1), (3, 2), (100, 1)])
def test_batching_and_workers_do_not_change_vectors(
    minilm: MiniLMEmbedder, batch_size: int, workers: int
) -> None:
    texts = [case["text"] for case in REFERENCE["cases"]]
    other = MiniLMEmbedder(batch_size=batch_size, workers=workers)
    np.testing.assert_allclose(other.embed_sync(texts), minilm.embed_sync(texts), atol=1e-5)


@pytest.mark.parametrize("option", [{"batch_size": 0}, {"workers": 0}])
def test_rejects_sizes_below_one(option: dict) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        MiniLMEmbedder(**option)


def test_rejects_a_token_limit_past_the_position_table() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        MiniLMEmbedder(max_tokens=513)
