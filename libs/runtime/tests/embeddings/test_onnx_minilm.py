"""The onnxruntime all-MiniLM-L6-v2 against the numpy one, and its own options.

Its match with the reference sentence-transformers vectors is checked in test_minilm.py.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from safetensors.numpy import load_file

from mnemo_runtime.embeddings import MiniLMEmbedder, OnnxMiniLMEmbedder
from mnemo_runtime.embeddings.bert import BertConfig
from mnemo_runtime.embeddings.bert_onnx import OPSET, build_bert_graph
from mnemo_runtime.embeddings.minilm import bundled_model_dir

_STORY = (
    "We drove up the coast for the weekend, stopped at every bakery we passed, and argued "
    "about which playlist to put on while the kids slept in the back seat. "
)
# Conversational turns in the style of LoCoMo, one far past the 256-token limit.
SENTENCES = [
    "Hey Mel! I went to the LGBTQ support group yesterday and it was so powerful.",
    "That's amazing, Caroline! How did the kids like the pottery class on Saturday?",
    "I'm thinking of applying to counseling programs in the fall, maybe in Boston.",
    "Ugh, my car broke down again on the way to work this morning 😩",
    "ok",
    "",
    "Did you end up adopting the rescue dog you told me about in May?",
    _STORY * 20,
]


def test_long_sentence_is_past_the_token_limit() -> None:
    assert len(SENTENCES[-1].split()) > 2 * 256


def test_matches_the_numpy_embedder(
    onnx_minilm: OnnxMiniLMEmbedder, minilm: MiniLMEmbedder
) -> None:
    fast = onnx_minilm.embed_sync(SENTENCES)
    # One text at a time, so the long text is not padded with three others (numpy is slow).
    reference = np.concatenate([minilm.embed_sync([text]) for text in SENTENCES])
    np.testing.assert_allclose(fast, reference, atol=1e-5)
    assert float(np.min(np.sum(fast * reference, axis=1))) > 0.99999


async def test_empty_input_gives_an_empty_array(onnx_minilm: OnnxMiniLMEmbedder) -> None:
    vectors = await onnx_minilm.embed([])
    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


@pytest.mark.parametrize(("batch_size", "workers", "threads"), [(1, 1, 1), (3, 2, 2)])
def test_options_do_not_change_vectors(
    onnx_minilm: OnnxMiniLMEmbedder, batch_size: int, workers: int, threads: int
) -> None:
    other = OnnxMiniLMEmbedder(batch_size=batch_size, workers=workers, threads=threads)
    np.testing.assert_allclose(
        other.embed_sync(SENTENCES), onnx_minilm.embed_sync(SENTENCES), atol=1e-5
    )


@pytest.mark.parametrize("option", [{"batch_size": 0}, {"workers": 0}, {"threads": 0}])
def test_rejects_sizes_below_one(option: dict) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        OnnxMiniLMEmbedder(**option)


def test_rejects_a_token_limit_past_the_position_table() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        OnnxMiniLMEmbedder(max_tokens=513)


def test_graph_is_valid_standard_onnx() -> None:
    directory = bundled_model_dir()
    graph = build_bert_graph(
        BertConfig.from_file(directory / "config.json"),
        load_file(str(directory / "model.safetensors")),
    )
    model = graph.model
    # Put the weights back inline, as the checker reads external data only from files.
    for index, tensor in enumerate(model.graph.initializer):
        if tensor.name in graph.weights:
            inline = numpy_helper.from_array(graph.weights[tensor.name], tensor.name)
            model.graph.initializer[index].CopyFrom(inline)
    onnx.checker.check_model(model, full_check=True)
    assert {op.domain for op in model.opset_import} == {""}
    assert [op.version for op in model.opset_import] == [OPSET]
    assert all(node.domain == "" for node in model.graph.node)


async def test_without_int8_a_query_is_embedded_exactly_as_a_text() -> None:
    exact = OnnxMiniLMEmbedder(query_int8=False)
    for text in SENTENCES:
        np.testing.assert_allclose(await exact.embed_query(text), exact.embed_sync([text])[0])


async def test_int8_queries_rank_texts_as_full_precision_ones_do(
    onnx_minilm: OnnxMiniLMEmbedder,
) -> None:
    documents = onnx_minilm.embed_sync(SENTENCES)
    queries = [
        "support group for LGBTQ people",
        "the children's pottery class",
        "graduate school applications",
        "a car that stopped working",
        "adopting a dog from a shelter",
        "a road trip along the coast with bakeries",
    ]
    full = onnx_minilm.embed_sync(queries) @ documents.T
    quantized = np.stack([await onnx_minilm.embed_query(q) for q in queries]) @ documents.T
    np.testing.assert_array_equal(np.argmax(quantized, axis=1), np.argmax(full, axis=1))
    assert float(np.abs(quantized - full).max()) < 0.03
    # Not the same computation: the int8 weights do change the vectors a little.
    assert float(np.abs(quantized - full).max()) > 1e-4
