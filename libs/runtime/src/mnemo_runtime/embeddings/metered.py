"""An Embedder wrapper that feeds the embedding throughput and latency metrics."""

from __future__ import annotations

import time
from collections.abc import Sequence

from mnemo_runtime.embeddings.ports import Embedder, Vector, Vectors
from mnemo_runtime.metrics import EMBED_SECONDS, EMBED_TEXTS


class MeteredEmbedder:
    """An Embedder that counts the texts it embeds and times each call; otherwise ``inner``."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self._store_texts = EMBED_TEXTS.labels("store")
        self._store_seconds = EMBED_SECONDS.labels("store")
        self._query_texts = EMBED_TEXTS.labels("query")
        self._query_seconds = EMBED_SECONDS.labels("query")

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """``inner.embed``, counted and timed."""
        started = time.perf_counter()
        vectors = await self.inner.embed(texts)
        self._store_seconds.observe(time.perf_counter() - started)
        self._store_texts.inc(len(texts))
        return vectors

    async def embed_query(self, text: str) -> Vector:
        """``inner.embed_query``, counted and timed."""
        started = time.perf_counter()
        vector = await self.inner.embed_query(text)
        self._query_seconds.observe(time.perf_counter() - started)
        self._query_texts.inc()
        return vector
